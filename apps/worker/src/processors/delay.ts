import { DelayedError, type Job } from 'bullmq';

/**
 * Puts the job back to delayed until `at` (epoch ms) without spending an attempt, and ends the processor: BullMQ takes
 * the DelayedError thrown here as "moved, not failed".
 */
export async function backToDelayed(job: Job, token: string, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}
