import type { Prisma } from '../../../../generated/prisma/client';
import { rawQuery, type Tx } from '../db';

/**
 * Every event type of DESIGN section 5. A webhook subscribed to `*` gets each of them, including types added later.
 * Adding one: name it here, emit it in the transaction of its change, and describe it in docs/webhooks.md.
 */
export const EVENT_TYPES = [
  'message.sent',
  'message.failed',
  'message.bounced',
  'message.complained',
  'subscriber.pending',
  'subscriber.confirmed',
  'subscriber.unsubscribed',
  'prospect.replied',
  'prospect.state_changed',
  'broadcast.finished',
  'link.placed',
  'link.lost',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type EventData = Record<string, unknown>;

/**
 * Writes an event into the outbox. Call it with the transaction that makes the change it reports: the event then
 * exists exactly when the change does. Delivery (webhooks) happens later, in the worker.
 */
export async function emitEvent(tx: Tx, accountId: number, type: EventType, data: EventData): Promise<void> {
  await emitEvents(tx, [{ accountId, type, data }]);
}

export interface PendingEvent {
  accountId: number;
  type: EventType;
  data: EventData;
}

/** Several events in one statement (same rule: inside the transaction of their change). */
export async function emitEvents(tx: Tx, events: PendingEvent[]): Promise<void> {
  if (!events.length) return;
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data)
     SELECT * FROM unnest($1::int[], $2::text[], $3::jsonb[])`,
    [events.map((e) => e.accountId), events.map((e) => e.type), events.map((e) => JSON.stringify(e.data))],
  );
}

/** An event row as the outbox keeps it. */
export type EventRow = Prisma.EventGetPayload<object>;
