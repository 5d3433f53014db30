import type { Job } from 'bullmq';
import type { Db } from '../../../core/src/db';
import { failImport, runImport } from '../../../core/src/imports';
import type { JobPayloads } from '../../../core/src/queues';
import type { Verifier } from '../../../core/src/verify';

/**
 * Applies an import's stored lines (apps/core/src/imports/run.ts), verifying their addresses with the process's
 * verifier when the import asks; past its last attempt the import is marked failed.
 */
export const importProcessor = (db: Db, verifier: Verifier) => (job: Job<JobPayloads['imports']>) => processImport(db, job, verifier);

export async function processImport(db: Db, job: Job<JobPayloads['imports']>, verifier: Verifier): Promise<string> {
  try {
    return await runImport(db, job.data.importId, verifier);
  } catch (err) {
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) await failImport(db, job.data.importId, (err as Error).message).catch(() => undefined);
    throw err;
  }
}
