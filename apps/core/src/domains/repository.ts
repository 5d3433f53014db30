import type { Db, Tx } from '../db';

/** The SQL of sending domains (docs/domains.md): claiming due checks, and locking a domain to write a check's result. */

/**
 * Moves `next_check_at` of up to `limit` domains whose check is due `leaseMs` ahead, skipping rows another claim holds,
 * in one statement; returns their ids.
 */
export async function claimDueDomainChecks(db: Db, leaseMs: number, limit: number): Promise<{ id: number }[]> {
  return db.$queryRaw<{ id: number }[]>`
      UPDATE domains SET next_check_at = now() + ${leaseMs} * interval '1 millisecond'
      WHERE id IN (
        SELECT id FROM domains WHERE next_check_at <= now()
        ORDER BY next_check_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING id`;
}

/** Locks a domain's row in the caller's transaction and reads its status; null when it is gone. */
export async function lockDomain(tx: Tx, id: number): Promise<{ status: 'pending' | 'verified' | 'failed'; failures: number } | null> {
  const rows = await tx.$queryRaw<{ status: 'pending' | 'verified' | 'failed'; failures: number }[]>`
      SELECT status::text AS status, failures FROM domains WHERE id = ${id} FOR UPDATE`;
  return rows[0] ?? null;
}
