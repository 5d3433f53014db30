import type { Job } from 'bullmq';
import type { Db } from '../../../core/src/db';
import { logger } from '../../../core/src/logger';
import { runSequenceStep, type StepOutcome } from '../../../core/src/outreach/steps';
import type { JobPayloads } from '../../../core/src/queues';
import { backToDelayed } from './delay';

export const sequenceProcessor = (db: Db) => (job: Job<JobPayloads['sequence']>, token?: string) => processSequenceStep(db, job, token);

/**
 * Writes step `step` of a prospect's sequence (the payload is ids only; the row is reloaded and re-checked).
 * A step that may not go out yet (the mailbox's gap or daily cap, or not due) waits in the queue until it may.
 */
export async function processSequenceStep(db: Db, job: Job<JobPayloads['sequence']>, token?: string): Promise<StepOutcome> {
  const { prospectId, step } = job.data;
  const outcome = await runSequenceStep(db, prospectId, step);
  // every step at info: what the operator reads first when a prospect "did not get" an email
  switch (outcome.kind) {
    case 'written':
      logger.info({ prospect: prospectId, step, message: outcome.messageId, next: outcome.next.at.toISOString() }, 'sequence step written');
      break;
    case 'closed':
      logger.info({ prospect: prospectId, step }, 'sequence closed: no reply after the last step');
      break;
    case 'deferred':
      logger.info({ prospect: prospectId, step, until: outcome.until.toISOString(), why: outcome.why }, 'sequence step waits');
      break;
    case 'skipped':
      logger.info({ prospect: prospectId, step, why: outcome.why }, 'sequence step skipped');
      break;
  }
  if (outcome.kind === 'deferred' && token) return backToDelayed(job, token, Math.max(outcome.until.getTime(), Date.now() + 50));
  return outcome;
}
