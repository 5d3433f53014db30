import { config } from '../config';
import type { Db } from '../db';
import { logger } from '../logger';
import { deleteEntriesBefore } from './repository';

/** Entries deleted by one statement; one run deletes at most MAX_BATCHES of them, the next run (hourly) goes on. */
const BATCH = 5_000;
const MAX_BATCHES = 100;

/**
 * AUDIT_RETENTION_DAYS (0, the default, keeps every entry): entries older than that are deleted. The log's trigger
 * refuses every UPDATE and DELETE (docs/teams.md) but this one (./repository.ts): the one way an entry goes.
 */
export async function dropOldAuditEntries(db: Db, now = new Date(), days = config().auditRetentionDays): Promise<number> {
  if (days <= 0) return 0;
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  let deleted = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await deleteEntriesBefore(db, cutoff, BATCH);
    deleted += n;
    if (n < BATCH) break;
  }
  if (deleted) logger.info({ deleted, days }, 'retention: old audit entries dropped');
  return deleted;
}
