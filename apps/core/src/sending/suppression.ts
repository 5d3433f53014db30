import type { Tx } from '../db';
import { domainAndParents, domainOf } from '../outreach/contacts';

/** Why a recipient is left out of a send: the account's suppression list (bounced, complained) or its stop list. */
export type SkipReason = 'bounced' | 'complained' | 'stopped';

/** The addresses among `emails` (lower-cased) the account must not write to, with the reason. */
export async function blockedRecipients(db: Tx, accountId: number, emails: string[]): Promise<Map<string, SkipReason>> {
  const blocked = new Map<string, SkipReason>();
  if (!emails.length) return blocked;
  // one rule with outreach: a stop-listed domain covers its subdomains too
  const domains = [...new Set(emails.flatMap((email) => domainAndParents(domainOf(email))))];
  const [suppressed, stopped] = await Promise.all([
    db.suppression.findMany({ where: { accountId, email: { in: emails } }, select: { email: true, reason: true } }),
    db.stopEntry.findMany({
      where: { accountId, OR: [{ kind: 'email', value: { in: emails } }, { kind: 'domain', value: { in: domains } }] },
      select: { value: true, kind: true },
    }),
  ]);
  for (const s of suppressed) blocked.set(s.email, s.reason);
  for (const email of emails) {
    if (blocked.has(email)) continue;
    const mine = new Set(domainAndParents(domainOf(email)));
    if (stopped.some((s) => (s.kind === 'email' ? s.value === email : mine.has(s.value)))) blocked.set(email, 'stopped');
  }
  return blocked;
}
