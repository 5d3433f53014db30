import { rawQuery, type Tx } from '../db';

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
  const [counts] = await rawQuery<{ by_status: Record<string, number> | null; oldest: number | null; expired: number; not_enqueued: number }>(
    db,
    `SELECT
       (SELECT json_object_agg(status, n) FROM (SELECT status::text, count(*)::int AS n FROM messages GROUP BY status) s) AS by_status,
       (SELECT extract(epoch FROM now() - min(created_at))::float FROM messages
         WHERE status IN ('queued', 'deferred') AND (not_before IS NULL OR not_before <= now())) AS oldest,
       (SELECT count(*)::int FROM messages WHERE status = 'sending' AND locked_until < now()) AS expired,
       (SELECT count(*)::int FROM messages WHERE status IN ('queued', 'deferred') AND enqueued_at IS NULL) AS not_enqueued`,
  );
  const byStatus = { queued: 0, deferred: 0, sending: 0, sent: 0, failed: 0, bounced: 0, cancelled: 0 };
  for (const [status, n] of Object.entries(counts?.by_status ?? {})) byStatus[status as keyof typeof byStatus] = n;
  return {
    byStatus,
    oldestQueuedSeconds: counts?.oldest == null ? null : Math.round(counts.oldest * 10) / 10,
    expiredLeases: counts?.expired ?? 0,
    notEnqueued: counts?.not_enqueued ?? 0,
  };
}
