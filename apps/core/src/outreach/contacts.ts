import { Joi } from '../validate';
import { rawQuery, type Tx } from '../db';

/** How prospects are matched and who may never be written to: normalised addresses, site hosts and the stop list. */

const emailSchema = Joi.string().trim().lowercase().max(254).email({ tlds: false, allowUnicode: true });

/** A lower-cased valid address, or null. */
export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string' || !raw.trim()) return null;
  const { error, value } = emailSchema.validate(raw);
  return error ? null : (value as string);
}

/** `https://www.Example.com/path` -> `example.com`: no scheme, no `www.`, no port or path, lower-case; null when not a host name. */
export function normaliseSite(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  let rest = raw.trim().toLowerCase();
  if (!rest || rest.length > 2000) return null;
  rest = rest.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^\/\//, '');
  let host: string;
  try {
    host = new URL(`http://${rest}`).hostname;
  } catch {
    return null;
  }
  host = host.replace(/\.$/, '').replace(/^www\./, '');
  if (host.length > 253 || !/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(host)) return null;
  return host;
}

export const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1);

/** `mail.acme.co.uk` -> [mail.acme.co.uk, acme.co.uk, co.uk]: a stop-listed domain covers its subdomains too. */
export function domainAndParents(host: string): string[] {
  const labels = host.split('.');
  const out: string[] = [];
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'));
  return out;
}

/** True when the address, its domain or the site (or a parent domain of either) is on the account's stop list. */
export async function isStopListed(db: Tx, accountId: number, contact: { email: string | null; site: string | null }): Promise<boolean> {
  return (await loadStopList(db, accountId, [contact])).covers(contact);
}

/** The account's stop-list entries that can touch these contacts, read once for a whole request (sending/write.ts applies the same rule in SQL). */
export async function loadStopList(db: Tx, accountId: number, contacts: { email: string | null; site: string | null }[]) {
  const domainsOf = (c: { email: string | null; site: string | null }) => [
    ...(c.email ? domainAndParents(domainOf(c.email)) : []),
    ...(c.site ? domainAndParents(c.site) : []),
  ];
  const emails = contacts.flatMap((c) => (c.email ? [c.email] : []));
  const domains = [...new Set(contacts.flatMap(domainsOf))];
  const entries = await rawQuery<{ kind: string; value: string }>(
    db,
    `SELECT kind::text AS kind, value FROM stop_list
     WHERE account_id = $1 AND ((kind = 'email' AND value = ANY($2::text[])) OR (kind = 'domain' AND value = ANY($3::text[])))`,
    [accountId, emails, domains],
  );
  const stoppedEmails = new Set(entries.filter((e) => e.kind === 'email').map((e) => e.value));
  const stoppedDomains = new Set(entries.filter((e) => e.kind === 'domain').map((e) => e.value));
  return {
    covers: (c: { email: string | null; site: string | null }) =>
      (c.email !== null && stoppedEmails.has(c.email)) || domainsOf(c).some((d) => stoppedDomains.has(d)),
  };
}

/** Puts an address on the account's stop list (idempotent). */
export async function addToStopList(db: Tx, accountId: number, email: string): Promise<void> {
  await db.stopEntry.upsert({
    where: { accountId_value: { accountId, value: email } },
    create: { accountId, value: email, kind: 'email' },
    update: {},
  });
}
