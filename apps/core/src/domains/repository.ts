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

type LockedDomain = { status: 'pending' | 'verified' | 'failed'; failures: number; inbound: boolean; inboundMxFoundAt: Date | null };

/** Locks a domain's row in the caller's transaction and reads its status and whether its mail is taken; null when it is gone. */
export async function lockDomain(tx: Tx, id: number): Promise<LockedDomain | null> {
  const rows = await tx.$queryRaw<LockedDomain[]>`
      SELECT status::text AS status, failures, inbound, inbound_mx_found_at AS "inboundMxFoundAt" FROM domains WHERE id = ${id} FOR UPDATE`;
  return rows[0] ?? null;
}
