import type { Job } from 'bullmq';
import { db } from '../../../core/src/db';
import { checkProspectLink, type CheckOutcome } from '../../../core/src/outreach/link-check';
import type { JobPayloads } from '../../../core/src/queues';

/** Checks one prospect's page for the campaign's target link (the payload is the id; the row is reloaded). */
export async function processLinkCheck(job: Job<JobPayloads['links']>): Promise<CheckOutcome> {
  return checkProspectLink(db(), job.data.prospectId);
}
