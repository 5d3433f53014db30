import type { Db } from '../db';
import { logger } from '../logger';
import { QUEUE, jobId, queue } from '../queues';
import { enqueueDelivery } from './outbox';

/** A row queued longer ago than this without being finished gets its job looked at. */
const STALE_AFTER_MS = 5 * 60_000;
const BATCH = 500;

/**
 * Re-queues messages Postgres holds but Redis does not: rows never queued (Redis was down at accept time, or the
 * process died between commit and enqueue), rows whose job vanished, and rows left `sending` by a worker that died
 * (lease expired). A row whose job is still waiting, delayed or running is left to it; a finished job whose row is
 * unfinished is replaced under the same deterministic id. Safe to run anywhere and often: a queued job finds a
 * finished row and does nothing.
 */
export async function reconcileDeliveries(db: Db, now = new Date()): Promise<{ requeued: number; onTheirWay: number }> {
  const stranded = await db.message.findMany({
    where: {
      OR: [
        { status: { in: ['queued', 'deferred'] }, OR: [{ enqueuedAt: null }, { enqueuedAt: { lt: new Date(now.getTime() - STALE_AFTER_MS) } }] },
        { status: 'sending', lockedUntil: { lt: now } },
      ],
    },
    select: { id: true, notBefore: true },
    orderBy: { createdAt: 'asc' },
    take: BATCH,
  });
  const deliveries = queue(QUEUE.delivery);
  const requeue: typeof stranded = [];
  const onTheirWay: string[] = [];
  for (const message of stranded) {
    const job = await deliveries.getJob(jobId.delivery(message.id));
    const state = job ? await job.getState() : 'unknown';
    if (state === 'completed' || state === 'failed') {
      const removed = await job!.remove().then(() => true, () => false);
      if (removed) requeue.push(message);
    } else if (state === 'unknown') {
      requeue.push(message);
    } else {
      // waiting, delayed, prioritized, or active (a dead worker's job comes back through BullMQ's stalled check)
      onTheirWay.push(message.id);
    }
  }
  await enqueueDelivery(db, requeue);
  if (onTheirWay.length) await db.message.updateMany({ where: { id: { in: onTheirWay } }, data: { enqueuedAt: now } });
  if (requeue.length) logger.info({ requeued: requeue.length }, 'reconciler queued stranded messages');
  return { requeued: requeue.length, onTheirWay: onTheirWay.length };
}
