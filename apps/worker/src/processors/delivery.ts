import type { Job } from 'bullmq';
import type { JobPayloads } from '../../../core/src/queues';

// Issue 3 (Sending): deliver one Message row over SMTP. Not built yet.
export async function processDelivery(job: Job<JobPayloads['delivery']>): Promise<void> {
  throw new Error(`delivery of ${job.data.messageId} is not built yet`);
}
