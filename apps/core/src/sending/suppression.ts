import { rawQuery, type Tx } from '../db';
import { domainAndParents, domainOf } from '../outreach/contacts';

/** Why a recipient is left out of a send: the account's suppression list (bounced, complained) or its stop list. */
export type SkipReason = 'bounced' | 'complained' | 'stopped';

/** The addresses among `emails` (lower-cased) the account must not write to, with the reason. */
export async function blockedRecipients(db: Tx, accountId: number, emails: string[]): Promise<Map<string, SkipReason>> {
  const blocked = new Map<string, SkipReason>();
  if (!emails.length) return blocked;
  // one rule with outreach: a stop-listed domain covers its subdomains too
  const domains = [...new Set(emails.flatMap((email) => domainAndParents(domainOf(email))))];
  // one query for both lists: this runs on every send
  const rows = await rawQuery<{ value: string; reason: string; kind: string }>(
    db,
    `SELECT email AS value, reason::text AS reason, 'email' AS kind FROM suppressions WHERE account_id = $1 AND email = ANY($2::text[])
     UNION ALL
     SELECT value, 'stopped', kind::text FROM stop_list
     WHERE account_id = $1 AND ((kind = 'email' AND value = ANY($2::text[])) OR (kind = 'domain' AND value = ANY($3::text[])))`,
    [accountId, emails, domains],
  );
  const suppressed = rows.filter((r) => r.reason !== 'stopped').map((r) => ({ email: r.value, reason: r.reason as SkipReason }));
  const stopped = rows.filter((r) => r.reason === 'stopped');
  for (const s of suppressed) blocked.set(s.email, s.reason);
  for (const email of emails) {
    if (blocked.has(email)) continue;
    const mine = new Set(domainAndParents(domainOf(email)));
    if (stopped.some((s) => (s.kind === 'email' ? s.value === email : mine.has(s.value)))) blocked.set(email, 'stopped');
  }
  return blocked;
}
