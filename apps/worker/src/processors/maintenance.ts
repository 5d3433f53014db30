import type { Job } from 'bullmq';
import type { JobPayloads } from '../../../core/src/queues';
import { db } from '../../../core/src/db';
import { scheduleDueSteps } from '../../../core/src/outreach/scheduler';

/** Housekeeping, dispatched by task. Each task is idempotent: running it twice or on two workers is harmless. */
export const maintenanceTasks: Record<JobPayloads['maintenance']['task'], () => Promise<unknown>> = {
  // Issue 3: re-queue messages stored but never queued (Redis was down, or a crash between commit and enqueue).
  reconcile: async () => undefined,
  // Issue 5: claim prospects whose next_at is due and queue their step.
  schedule: () => scheduleDueSteps(db()),
  // Issue 3: drop idempotency records older than 24 hours.
  cleanup: async () => undefined,
};

/** How often each task runs. */
export const MAINTENANCE_EVERY_MS: Record<JobPayloads['maintenance']['task'], number> = {
  reconcile: 30_000,
  schedule: 5_000,
  cleanup: 3_600_000,
};

export async function processMaintenance(job: Job<JobPayloads['maintenance']>): Promise<unknown> {
  return maintenanceTasks[job.data.task]();
}
