import type { Job } from 'bullmq';
import { runBroadcast } from '../../../core/src/broadcasts/run';
import { db } from '../../../core/src/db';
import type { JobPayloads } from '../../../core/src/queues';

/** Writes and queues a broadcast's copies page by page until it is sent or paused (docs/broadcasts.md). */
export async function processBroadcast(job: Job<JobPayloads['broadcast']>): Promise<string> {
  return runBroadcast(db(), job.data.broadcastId);
}
