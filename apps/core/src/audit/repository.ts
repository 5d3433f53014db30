import type { Db } from '../db';

/**
 * The audit log's one delete (retention, ./retention.ts): up to `limit` entries older than `cutoff`, in a transaction
 * that first names that cut-off to the append-only trigger (`mailservice.audit_prune_before`, local to it). The trigger
 * lets through only the deletes of entries older than it: every other UPDATE or DELETE is refused.
 */
export function deleteEntriesBefore(db: Db, cutoff: Date, limit: number): Promise<number> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT set_config('mailservice.audit_prune_before', ${cutoff.toISOString()}, true)`;
    return tx.$executeRaw`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ${cutoff} ORDER BY id LIMIT ${limit})`;
  });
}
