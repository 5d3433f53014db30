import type { Db, Tx } from '../db';

/** The SQL of tracking domains (docs/tracking-domains.md): claiming due checks, the live host of an account's links. */

/**
 * Moves `next_check_at` of up to `limit` tracking domains whose check (DNS, an order, a renewal) is due `leaseMs`
 * ahead, skipping rows another claim holds, in one statement; returns their ids.
 */
export async function claimDueTrackingChecks(db: Db, leaseMs: number, limit: number): Promise<{ id: number }[]> {
  return db.$queryRaw<{ id: number }[]>`
      UPDATE tracking_domains SET next_check_at = now() + ${leaseMs} * interval '1 millisecond'
      WHERE id IN (
        SELECT id FROM tracking_domains WHERE next_check_at <= now()
        ORDER BY next_check_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING id`;
}

/**
 * The name an account's links use: its newest active domain whose certificate is valid for another minute (an email
 * read later falls back through its click anyway: the token is signed, not the host). None: PUBLIC_URL.
 */
export async function liveTrackingName(db: Tx, accountId: number): Promise<string | null> {
  const rows = await db.$queryRaw<{ name: string }[]>`
      SELECT name FROM tracking_domains
      WHERE account_id = ${accountId} AND status = 'active' AND not_after > now() + interval '1 minute'
      ORDER BY issued_at DESC, id DESC
      LIMIT 1`;
  return rows[0]?.name ?? null;
}

/** The certificate and sealed key served for a name by SNI, while valid; null otherwise. */
export async function servedCertificate(db: Tx, name: string): Promise<{ certificatePem: string; privateKeyEnc: string; notAfter: Date } | null> {
  const rows = await db.$queryRaw<{ certificate_pem: string; private_key_enc: string; not_after: Date }[]>`
      SELECT certificate_pem, private_key_enc, not_after FROM tracking_domains
      WHERE name = ${name} AND certificate_pem IS NOT NULL AND not_after > now()`;
  const row = rows[0];
  return row ? { certificatePem: row.certificate_pem, privateKeyEnc: row.private_key_enc, notAfter: row.not_after } : null;
}


/** Challenges an order left behind (its process died before removing them): a CA checks within minutes, not a day. */
export async function dropStaleChallenges(db: Db): Promise<number> {
  return db.$executeRaw`DELETE FROM acme_challenges WHERE created_at < now() - interval '1 day'`;
}
