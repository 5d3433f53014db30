import { rawQuery, type Tx } from '../db';
import { MESSAGE_EVENT_DATA, subscribed } from '../events/repository';

/** The SQL of the sandbox (docs/sandbox.md): the sink's messages (a test send's write is sending/sandbox-write.ts). */

/** Keeps what the sandbox received for a message (a delivery tried again keeps its first copy). */
export async function keepSandboxCopy(tx: Tx, messageId: string, raw: Buffer): Promise<void> {
  await rawQuery(tx, 'INSERT INTO sandbox_messages (message_id, raw) VALUES ($1::uuid, $2) ON CONFLICT (message_id) DO NOTHING', [messageId, raw]);
}

/**
 * The MIME the sandbox received for a message of the account, by the message's id or by the id of a send of one
 * message; null when there is none (not a test send, not delivered yet, another account's).
 */
export async function sandboxCopy(tx: Tx, accountId: number, id: string): Promise<Buffer | null> {
  const rows = await rawQuery<{ raw: Buffer }>(
    tx,
    `SELECT sm.raw FROM sandbox_messages sm JOIN messages m ON m.id = sm.message_id
     WHERE m.account_id = $1 AND (m.id = $2::uuid OR (m.send_id = $2::uuid AND (SELECT count(*) FROM messages o WHERE o.send_id = $2::uuid) = 1))`,
    [accountId, id],
  );
  return rows[0]?.raw ?? null;
}

/**
 * A sandbox message delivered: `sent` with the sandbox's answer, and its `message.sent` event with the data a live
 * delivery's has (delivery/repository.ts MARK_SENT), in one statement. Nothing is counted in the statistics.
 */
export async function markSandboxSent(tx: Tx, messageId: string, response: string): Promise<void> {
  await rawQuery(
    tx,
    `WITH marked AS (
       UPDATE messages m SET status = 'sent', sent_at = now(), smtp_response = $2, last_error = NULL, locked_until = NULL, updated_at = now()
       WHERE m.id = $1::uuid AND m.status::text = 'sending'
       RETURNING m.*
     )
     INSERT INTO events (account_id, type, data)
     SELECT m.account_id, 'message.sent', ${MESSAGE_EVENT_DATA} FROM marked m LEFT JOIN sends s ON s.id = m.send_id
     WHERE ${subscribed('m.account_id', `'message.sent'`)}`,
    [messageId, response],
  );
}

/** A sandbox message deferred: tried again once `until` comes (the deferral's attempt is recorded by the caller). */
export async function deferSandboxMessage(tx: Tx, messageId: string, until: Date): Promise<void> {
  await rawQuery(tx, 'UPDATE messages SET not_before = $2, updated_at = now() WHERE id = $1::uuid', [messageId, until]);
}

/** A message the sandbox kept, as the console's Sandbox page lists it. */
export interface SandboxRow {
  id: string;
  account_id: number;
  to: string;
  subject: string;
  status: string;
  kept_at: Date;
}

/** The messages the sandbox kept, newest first (`account`: one account's only). */
export function latestSandboxMessages(tx: Tx, limit: number, account: number | null): Promise<SandboxRow[]> {
  return rawQuery<SandboxRow>(
    tx,
    `SELECT m.id::text, m.account_id, m."to", m.subject, m.status::text, sm.created_at AS kept_at
     FROM sandbox_messages sm JOIN messages m ON m.id = sm.message_id
     WHERE $2::int IS NULL OR m.account_id = $2::int
     ORDER BY sm.created_at DESC, sm.message_id DESC LIMIT $1`,
    [limit, account],
  );
}

/** The MIME the sandbox kept for a message of any account (the operator's console). */
export async function sandboxCopyOf(tx: Tx, messageId: string): Promise<Buffer | null> {
  const rows = await rawQuery<{ raw: Buffer }>(tx, 'SELECT raw FROM sandbox_messages WHERE message_id = $1::uuid', [messageId]);
  return rows[0]?.raw ?? null;
}
