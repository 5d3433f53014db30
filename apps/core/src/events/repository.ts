import { rawQuery, type Tx } from '../db';

/**
 * The SQL of the event outbox (the `events` table): the statements that write events, and the SQL expressions other
 * statements use to write theirs in the same round trip (delivery's "sent" mark, tracking's clicks and opens).
 */

/**
 * SQL: has the account an enabled endpoint subscribed to the type? Both are SQL expressions of the statement that
 * writes the event. An event is written only then: the outbox holds what will be delivered, and nothing else reads it.
 * Without the test every delivered email and every new subscriber wrote a row the dispatcher then marked, two row
 * writes each for nobody (bench/README.md: a third of Postgres's work per delivered email). An endpoint sees the
 * changes made after it exists, as with Postmark's and Resend's webhooks.
 */
export function subscribed(account: string, type: string): string {
  return `EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = ${account} AND ${wants('w', type)})`;
}

/** SQL: is the endpoint (a webhooks row by its alias) enabled and subscribed to the type (an SQL expression)? */
export function wants(webhook: string, type: string): string {
  return `${webhook}.enabled AND ('*' = ANY(${webhook}.events) OR ${type} = ANY(${webhook}.events))`;
}

/**
 * The `data` of a message event, as one SQL expression over a messages row `m` and its Send `s` (LEFT JOIN): id, send
 * id, to, subject, status, the SMTP answer, the Send's metadata and the bounce (docs/inbound.md) when there is one. The worker's batched "sent" mark puts it in its own
 * statement (delivery/repository.ts), the other outcomes through insertMessageEvent: one copy of the shape for both.
 */
export const MESSAGE_EVENT_DATA = `jsonb_build_object(
  'id', m.id, 'send_id', m.send_id, 'kind', m.kind, 'to', m."to", 'subject', m.subject, 'status', m.status,
  'smtp_response', COALESCE(m.smtp_response, ''), 'error', COALESCE(m.last_error, ''), 'metadata', COALESCE(s.metadata, '{}'::jsonb),
  'bounce', m.bounce - 'at')`;

/** Inserts into `events` each of the events an endpoint of its account wants (`subscribed`), in one statement. */
export async function insertWantedEvents(tx: Tx, events: { accountId: number; type: string; data: Record<string, unknown> }[]): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data)
     SELECT * FROM unnest($1::int[], $2::text[], $3::jsonb[]) AS e(account_id, type, data)
     WHERE ${subscribed('e.account_id', 'e.type')}`,
    [events.map((e) => e.accountId), events.map((e) => e.type), events.map((e) => JSON.stringify(e.data))],
  );
}

/** Inserts into `events` the event of a message (read from its `messages` row and Send) if an endpoint wants it. */
export async function insertMessageEvent(tx: Tx, messageId: string, type: string): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data)
     SELECT m.account_id, $2, ${MESSAGE_EVENT_DATA} FROM messages m LEFT JOIN sends s ON s.id = m.send_id
     WHERE m.id = $1::uuid AND ${subscribed('m.account_id', '$2')}`,
    [messageId, type],
  );
}
