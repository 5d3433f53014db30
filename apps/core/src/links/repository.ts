import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';

/** The SQL of the link checks (docs/links.md): claiming due checks, and locking a prospect to write a check's result. */

/**
 * Moves `link_check_at` of up to `limit` prospects whose check is due (all of them, or the one `prospectId`) `leaseMs`
 * ahead, skipping rows locked by another claim, in one statement; returns them with their new `link_check_at`.
 */
export async function claimDueLinkChecks(db: Db, prospectId: number | null, leaseMs: number, limit: number): Promise<{ id: number; link_check_at: Date }[]> {
  return db.$queryRaw<{ id: number; link_check_at: Date }[]>`
      UPDATE prospects SET link_check_at = now() + ${leaseMs} * interval '1 millisecond'
      WHERE id IN (
        SELECT id FROM prospects
        WHERE link_check_at <= now() AND link_url IS NOT NULL AND status IN ('agreed', 'placed')
          AND (${prospectId}::int IS NULL OR id = ${prospectId}::int)
        ORDER BY link_check_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, link_check_at`;
}

/** Locks the prospects row (FOR UPDATE, in the caller's transaction) and reads it with its campaign; null when gone. */
export async function lockProspect(tx: Tx, id: number): Promise<(Prospect & { campaign: Campaign }) | null> {
  await tx.$queryRaw`SELECT id FROM prospects WHERE id = ${id} FOR UPDATE`;
  return tx.prospect.findUnique({ where: { id }, include: { campaign: true } });
}
