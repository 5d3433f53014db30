import { DelayedError, type Job } from 'bullmq';
import { runBroadcast } from '../../../core/src/broadcasts/run';
import { db } from '../../../core/src/db';
import type { JobPayloads } from '../../../core/src/queues';

/** Writes and queues a broadcast's copies page by page until it is sent or paused (docs/broadcasts.md). */
export async function processBroadcast(job: Job<JobPayloads['broadcast']>, token?: string): Promise<string> {
  const outcome = await runBroadcast(db(), job.data.broadcastId);
  if (outcome instanceof Date && token) {
    // came before send_at (clocks differ between processes): back to delayed until then, without spending an attempt
    await job.moveToDelayed(outcome.getTime() + 100, token);
    throw new DelayedError();
  }
  return outcome instanceof Date ? 'early' : outcome;
}
