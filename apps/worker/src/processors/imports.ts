import type { Job } from 'bullmq';
import { db } from '../../../core/src/db';
import { failImport, runImport } from '../../../core/src/imports';
import type { JobPayloads } from '../../../core/src/queues';

/** Applies an import's stored lines (apps/core/src/imports/run.ts); past its last attempt the import is marked failed. */
export async function processImport(job: Job<JobPayloads['imports']>): Promise<string> {
  try {
    return await runImport(db(), job.data.importId);
  } catch (err) {
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) await failImport(db(), job.data.importId, (err as Error).message).catch(() => undefined);
    throw err;
  }
}
