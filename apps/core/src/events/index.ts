import type { Prisma } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { insertWantedEvents } from './repository';

/**
 * Every event type of docs/webhooks.md. A webhook subscribed to `*` gets each of them, including types added later.
 * Adding one: name it here, emit it in the transaction of its change, and describe it in docs/webhooks.md.
 */
export const EVENT_TYPES = [
  'message.sent',
  'message.failed',
  'message.cancelled',
  'message.bounced',
  'message.complained',
  'message.clicked',
  'message.opened',
  'message.received',
  'inbound.received',
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
  'domain.verified',
  'domain.failed',
  'mailbox.disconnected',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type EventData = Record<string, unknown>;

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
  await insertWantedEvents(tx, events);
}

/** An event row as the outbox keeps it. */
export type EventRow = Prisma.EventGetPayload<object>;
