import type { Tx } from '../db';

/** Why a recipient is left out of a send: the account's suppression list (bounced, complained) or its stop list. */
export type SkipReason = 'bounced' | 'complained' | 'stopped';

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

/** The addresses among `emails` (lower-cased) the account must not write to, with the reason. */
export async function blockedRecipients(db: Tx, accountId: number, emails: string[]): Promise<Map<string, SkipReason>> {
  const blocked = new Map<string, SkipReason>();
  if (!emails.length) return blocked;
  const domains = [...new Set(emails.map(domainOf))];
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
    if (stopped.some((s) => (s.kind === 'email' ? s.value === email : s.value === domainOf(email)))) blocked.set(email, 'stopped');
  }
  return blocked;
}

/** Puts an address on the account's suppression list after a permanent bounce; keeps an earlier entry as it is. */
export async function suppressBounced(db: Tx, accountId: number, email: string, detail: string): Promise<void> {
  await db.suppression.upsert({
    where: { accountId_email: { accountId, email: email.toLowerCase() } },
    create: { accountId, email: email.toLowerCase(), reason: 'bounced', detail: detail.slice(0, 1000) },
    update: {},
  });
}
