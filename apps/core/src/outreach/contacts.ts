import { Joi } from '../validate';
import type { Tx } from '../db';

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

/** True when the address, its domain or the site is on the account's stop list. */
export async function isStopListed(db: Tx, accountId: number, contact: { email: string | null; site: string | null }): Promise<boolean> {
  const domains = new Set<string>();
  if (contact.email) domainAndParents(domainOf(contact.email)).forEach((d) => domains.add(d));
  if (contact.site) domainAndParents(contact.site).forEach((d) => domains.add(d));
  const hit = await db.stopEntry.findFirst({
    where: {
      accountId,
      OR: [
        ...(contact.email ? [{ kind: 'email' as const, value: contact.email }] : []),
        ...(domains.size ? [{ kind: 'domain' as const, value: { in: [...domains] } }] : []),
      ],
    },
    select: { id: true },
  });
  return hit !== null;
}

/** Puts an address on the account's stop list (idempotent). */
export async function addToStopList(db: Tx, accountId: number, email: string): Promise<void> {
  await db.stopEntry.upsert({
    where: { accountId_value: { accountId, value: email } },
    create: { accountId, value: email, kind: 'email' },
    update: {},
  });
}
