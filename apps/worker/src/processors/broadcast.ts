import type { Job } from 'bullmq';
import { runBroadcast } from '../../../core/src/broadcasts/run';
import type { Db } from '../../../core/src/db';
import type { DeliveryQueue } from '../../../core/src/delivery/outbox';
import type { JobPayloads } from '../../../core/src/queues';
import { backToDelayed } from './delay';

/**
 * Writes and queues a broadcast's copies page by page until it is sent or paused (docs/broadcasts.md). It takes
 * BullMQ's abort signal (the third parameter: BullMQ passes one only to processors that declare it), which the worker
 * aborts when it stops: the job then goes back to the queue, due at once and without spending an attempt, and the
 * next worker's run picks up where the copies stand.
 */
export function broadcastProcessor(db: Db, deliveries: DeliveryQueue) {
  // three parameters declared: BullMQ hands the signal to a processor whose length is 3
  return (job: Job<JobPayloads['broadcast']>, token?: string, signal?: AbortSignal) => processBroadcast(db, job, token, signal, deliveries);
}

async function processBroadcast(db: Db, job: Job<JobPayloads['broadcast']>, token: string | undefined, signal: AbortSignal | undefined, deliveries: DeliveryQueue): Promise<string> {
  const outcome = await runBroadcast(db, deliveries, job.data.broadcastId, { signal });
  // came before send_at (clocks differ between processes): back to delayed until then, without spending an attempt
  if (outcome instanceof Date && token) return backToDelayed(job, token, outcome.getTime() + 100);
  if (outcome === 'interrupted') {
    // never completed while copies are left: without a token to move it, the job fails this attempt and is retried
    if (!token) throw new Error('the worker stopped in the middle of the broadcast');
    return backToDelayed(job, token, Date.now());
  }
  return outcome instanceof Date ? 'early' : outcome;
}
