import { DelayedError, type Job } from 'bullmq';
import { db } from '../../../core/src/db';
import { logger } from '../../../core/src/logger';
import { runSequenceStep, type StepOutcome } from '../../../core/src/outreach/steps';
import type { JobPayloads } from '../../../core/src/queues';

/**
 * Writes step `step` of a prospect's sequence (the payload is ids only; the row is reloaded and re-checked).
 * A step that may not go out yet (the mailbox's gap or daily cap, or not due) waits in the queue until it may.
 */
export async function processSequenceStep(job: Job<JobPayloads['sequence']>, token?: string): Promise<StepOutcome> {
  const outcome = await runSequenceStep(db(), job.data.prospectId, job.data.step);
  if (outcome.kind === 'skipped') logger.debug({ job: job.id, why: outcome.why }, 'sequence step skipped');
  if (outcome.kind === 'deferred' && token) {
    await job.moveToDelayed(Math.max(outcome.until.getTime(), Date.now() + 50), token);
    throw new DelayedError();
  }
  return outcome;
}
