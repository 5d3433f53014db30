import { MessageStatus } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';
import { deliveryCounts } from './repository';

/**
 * The statuses a message never leaves: delivered, refused for good or out of attempts, bounced, or cancelled by a
 * pre-send guard. The one definition: the delivery's claim, a send's own status, `Prefer: wait` and retention's SQL
 * (FINAL_STATUSES_SQL) all read it.
 */
export const FINAL_STATUSES: readonly MessageStatus[] = Object.freeze(['sent', 'failed', 'bounced', 'cancelled'] as const);

/** Whether a message with this status is done: nothing will try to send it again. */
export const isFinalStatus = (status: string): boolean => (FINAL_STATUSES as readonly string[]).includes(status);

/** FINAL_STATUSES as an SQL list, `('sent', ...)`, for statements that need it in their text. */
export const FINAL_STATUSES_SQL = `(${FINAL_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/**
 * The other statuses (a message still to be sent), as an SQL list: `status IN` it is served by an index on status,
 * where `status NOT IN FINAL_STATUSES_SQL` reads every row (retention's check of a partition, partitions/).
 */
export const OPEN_STATUSES_SQL = `(${Object.values(MessageStatus)
  .filter((s) => !isFinalStatus(s))
  .map((s) => `'${s}'`)
  .join(', ')})`;

export interface DeliveryStatus {
  /** rows per status, every status present (0 when none) */
  byStatus: Record<'queued' | 'deferred' | 'sending' | 'sent' | 'failed' | 'bounced' | 'cancelled', number>;
  /** seconds since the oldest row still waiting to go out (queued or deferred, and due) was written; null when none */
  oldestQueuedSeconds: number | null;
  /** rows left `sending` whose lease ran out: a worker died holding them (the reconciler re-queues them) */
  expiredLeases: number;
  /** queued or deferred rows not marked as queued in Redis (Redis refused them, or lost them and the reconciler cleared the mark) */
  notEnqueued: number;
}

/**
 * Postgres's truth about delivery, to show next to the queues' own counts: after Redis lost its data the queues say 0
 * while the rows still wait here. One statement; for the admin API (GET /admin/api/delivery/status) and for metrics.
 */
export async function deliveryStatus(db: Tx): Promise<DeliveryStatus> {
  const counts = await deliveryCounts(db);
  const byStatus = { queued: 0, deferred: 0, sending: 0, sent: 0, failed: 0, bounced: 0, cancelled: 0 };
  for (const [status, n] of Object.entries(counts?.by_status ?? {})) byStatus[status as keyof typeof byStatus] = n;
  return {
    byStatus,
    oldestQueuedSeconds: counts?.oldest == null ? null : Math.round(counts.oldest * 10) / 10,
    expiredLeases: counts?.expired ?? 0,
    notEnqueued: counts?.not_enqueued ?? 0,
  };
}
