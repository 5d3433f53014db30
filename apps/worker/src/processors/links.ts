import type { Job } from 'bullmq';
import type { Db } from '../../../core/src/db';
import { checkProspectLink, type CheckOutcome } from '../../../core/src/outreach/link-check';
import type { JobPayloads } from '../../../core/src/queues';

export const linkCheckProcessor = (db: Db) => (job: Job<JobPayloads['links']>) => processLinkCheck(db, job);

/** Checks one prospect's page for the campaign's target link (the payload is the id; the row is reloaded). */
export async function processLinkCheck(db: Db, job: Job<JobPayloads['links']>): Promise<CheckOutcome> {
  return checkProspectLink(db, job.data.prospectId);
}
