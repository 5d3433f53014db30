import { rawQuery, type Db, type Tx } from '../db';

/**
 * The verification's SQL: what the account knows of an address (read live, never cached), and where a result is kept
 * (the subscriber or prospect rows it was asked for, an import's counts).
 */

export interface AddressHistory {
  email: string;
  /** bounced or complained: the account's suppression, or a person of its lists recorded so; null when neither */
  suppressed: string | null;
  /** the worst the account's own mail to the address met: a hard bounce (dead), a soft one, or none */
  history: 'none' | 'soft_bounce' | 'hard_bounce';
}

/** Per (lower-cased) address: the account's suppression and its own bounces to it, in one statement. */
export function addressHistory(db: Db | Tx, accountId: number, emails: string[]): Promise<AddressHistory[]> {
  return rawQuery<AddressHistory>(
    db,
    `SELECT e.email,
       COALESCE((SELECT sp.reason::text FROM suppressions sp WHERE sp.account_id = $1 AND sp.email = e.email),
                (SELECT s.status::text FROM subscribers s JOIN lists l ON l.id = s.list_id
                 WHERE l.account_id = $1 AND s.email = e.email AND s.status IN ('bounced', 'complained') LIMIT 1)) AS suppressed,
       CASE WHEN EXISTS (SELECT 1 FROM messages m WHERE m.account_id = $1 AND m."to" = e.email
                           AND (m.status = 'bounced' OR COALESCE((m.bounce->>'dead')::boolean, false))) THEN 'hard_bounce'
            WHEN EXISTS (SELECT 1 FROM messages m WHERE m.account_id = $1 AND m."to" = e.email AND m.bounce IS NOT NULL) THEN 'soft_bounce'
            ELSE 'none' END AS history
     FROM unnest($2::text[]) AS e(email)`,
    [accountId, emails],
  );
}

export interface KeptVerification {
  email: string;
  result: string;
  checkedAt: Date;
}

/** Keeps each address's result on the row of that address: the list's subscriber, or the campaign's prospect. */
export async function keepVerifications(db: Db | Tx, owner: { list: number } | { campaign: number }, kept: KeptVerification[]): Promise<void> {
  if (!kept.length) return;
  const [table, column, id] = 'list' in owner ? ['subscribers', 'list_id', owner.list] : ['prospects', 'campaign_id', owner.campaign];
  await rawQuery(
    db,
    `UPDATE ${table} t SET verification_result = v.result::"VerificationResult", verification_checked_at = v.at
     FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS v(email, result, at)
     WHERE t.${column} = $1 AND t.email = v.email`,
    [id, kept.map((k) => k.email), kept.map((k) => k.result), kept.map((k) => k.checkedAt)],
  );
}

/** Adds a batch's counts by result to the import's (`{deliverable: n, ...}`). */
export async function countOnImport(tx: Tx, importId: number, counts: Record<string, number>): Promise<void> {
  await rawQuery(
    tx,
    `UPDATE imports SET verification = (
       SELECT COALESCE(jsonb_object_agg(k, COALESCE((verification->>k)::int, 0) + COALESCE(($2::jsonb->>k)::int, 0)), '{}'::jsonb)
       FROM (SELECT jsonb_object_keys(verification) AS k UNION SELECT jsonb_object_keys($2::jsonb)) AS keys)
     WHERE id = $1`,
    [importId, JSON.stringify(counts)],
  );
}
