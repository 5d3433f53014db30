import type { Prisma } from '../../../../generated/prisma/client';
import { rawQuery, type Tx } from '../db';

/**
 * Every event type of docs/webhooks.md. A webhook subscribed to `*` gets each of them, including types added later.
 * Adding one: name it here, emit it in the transaction of its change, and describe it in docs/webhooks.md.
 */
export const EVENT_TYPES = [
  'message.sent',
  'message.failed',
  'message.bounced',
  'message.complained',
  'message.clicked',
  'message.opened',
  'subscriber.pending',
  'subscriber.confirmed',
  'subscriber.unsubscribed',
  'prospect.replied',
  'prospect.state_changed',
  'broadcast.finished',
  'broadcast.paused',
  'campaign.paused',
  'link.placed',
  'link.lost',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type EventData = Record<string, unknown>;

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
 * Writes an event into the outbox if an endpoint of the account wants it (`subscribed`). Call it with the transaction
 * that makes the change it reports: the event then exists exactly when the change does. Delivery (webhooks) happens
 * later, in the worker.
 */
export async function emitEvent(tx: Tx, accountId: number, type: EventType, data: EventData): Promise<void> {
  await emitEvents(tx, [{ accountId, type, data }]);
}

export interface PendingEvent {
  accountId: number;
  type: EventType;
  data: EventData;
}

/** Several events in one statement (same rules: inside the transaction of their change, only if wanted). */
export async function emitEvents(tx: Tx, events: PendingEvent[]): Promise<void> {
  if (!events.length) return;
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data)
     SELECT * FROM unnest($1::int[], $2::text[], $3::jsonb[]) AS e(account_id, type, data)
     WHERE ${subscribed('e.account_id', 'e.type')}`,
    [events.map((e) => e.accountId), events.map((e) => e.type), events.map((e) => JSON.stringify(e.data))],
  );
}

/** An event row as the outbox keeps it. */
export type EventRow = Prisma.EventGetPayload<object>;
