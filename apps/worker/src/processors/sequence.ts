import type { Job } from 'bullmq';
import type { JobPayloads } from '../../../core/src/queues';

// Issue 5 (Outreach): write step `step` of a prospect's sequence. Not built yet.
export async function processSequenceStep(job: Job<JobPayloads['sequence']>): Promise<void> {
  throw new Error(`sequence step ${job.data.step} of prospect ${job.data.prospectId} is not built yet`);
}
