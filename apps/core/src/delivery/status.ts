import type { Tx } from '../db';
import { deliveryCounts } from './repository';

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
