import net from 'node:net';
import { ed25519Selector, rsaSelector } from './keys';

export type RecordStatus = 'found' | 'missing' | 'wrong';

/** A record to publish, with what the last check saw (docs/domains.md). */
export interface DomainRecord {
  type: 'TXT' | 'MX';
  /** the full name; `name` is the same relative to the domain (`@` for the domain itself), as DNS hosts' forms ask */
  host: string;
  name: string;
  value: string;
  purpose: 'dkim' | 'spf' | 'dmarc' | 'return_path' | 'inbound';
  /** required records decide `verified`; the others are advice (DMARC, the VERP return path, an inbound domain's MX) or an old key */
  required: boolean;
  status: RecordStatus;
  /** what DNS answered (each record's strings joined), so the operator sees why */
  seen: string[];
  /** what is wrong or what to do, in words; null when found */
  problem: string | null;
  /** DKIM records: the selector, its algorithm and its key's state (active, next, retired) */
  selector?: string;
  algorithm?: 'rsa' | 'ed25519';
  key_state?: 'active' | 'next' | 'retired';
  /** an old key's records: safe to remove from this time on */
  removable_at?: string | null;
}

export interface KeyPairPublic {
  selector: string;
  state: 'active' | 'next' | 'retired';
  rsaPublicKey: string;
  ed25519PublicKey: string;
  retiredAt: Date | null;
}

/** What the records of a domain depend on besides its keys: its relays and its VERP return path. */
export interface RecordContext {
  domain: string;
  keys: KeyPairPublic[];
  /** hosts (or addresses) of the SMTP relays the account's mailboxes on this domain send through */
  relays: string[];
  /** SPF_INCLUDE: the relay provider's SPF name, when set */
  spfInclude: string;
  /** the host the VERP return path's MX should name; null when the account does not use VERP on this domain */
  returnPathTarget: string | null;
  /** the host an inbound domain's MX should name (MX_HOSTNAME, docs/mx.md); null when the domain is not inbound */
  inboundTarget?: string | null;
}

/** Old keys stay published this long after signing moved off them, for mail already on its way. */
export const RETIRED_KEEP_MS = 7 * 24 * 3600_000;

const relative = (host: string, domain: string) => (host === domain ? '@' : host.slice(0, -(domain.length + 1)));

/** The SPF record to publish: SPF_INCLUDE when set, else each relay by address (ip4/ip6) or by name (a:). */
export function suggestedSpf(context: Pick<RecordContext, 'relays' | 'spfInclude'>): string {
  const mechanisms = context.spfInclude
    ? [`include:${context.spfInclude}`]
    : context.relays.map((r) => (net.isIPv4(r) ? `ip4:${r}` : net.isIPv6(r) ? `ip6:${r}` : `a:${r}`));
  return ['v=spf1', ...(mechanisms.length ? mechanisms : ['mx']), '~all'].join(' ');
}

/** The records a domain should have, all `missing` until a check sees them. */
export function expectedRecords(context: RecordContext): DomainRecord[] {
  const { domain } = context;
  const record = (r: Omit<DomainRecord, 'name' | 'status' | 'seen' | 'problem'>): DomainRecord => ({ ...r, name: relative(r.host, domain), status: 'missing', seen: [], problem: null });
  const records: DomainRecord[] = [];
  for (const key of context.keys) {
    const removableAt = key.retiredAt ? new Date(key.retiredAt.getTime() + RETIRED_KEEP_MS).toISOString() : null;
    const keyFields = { purpose: 'dkim' as const, required: key.state === 'active', key_state: key.state, ...(key.state === 'retired' ? { removable_at: removableAt } : {}) };
    records.push(record({ type: 'TXT', host: `${rsaSelector(key.selector)}._domainkey.${domain}`, value: `v=DKIM1; k=rsa; p=${key.rsaPublicKey}`, selector: rsaSelector(key.selector), algorithm: 'rsa', ...keyFields }));
    records.push(
      record({ type: 'TXT', host: `${ed25519Selector(key.selector)}._domainkey.${domain}`, value: `v=DKIM1; k=ed25519; p=${key.ed25519PublicKey}`, selector: ed25519Selector(key.selector), algorithm: 'ed25519', ...keyFields }),
    );
  }
  records.push(record({ type: 'TXT', host: domain, value: suggestedSpf(context), purpose: 'spf', required: true }));
  records.push(record({ type: 'TXT', host: `_dmarc.${domain}`, value: `v=DMARC1; p=none; rua=mailto:dmarc-reports@${domain}`, purpose: 'dmarc', required: false }));
  if (context.returnPathTarget) {
    records.push(record({ type: 'MX', host: `bounces.${domain}`, value: `10 ${context.returnPathTarget}`, purpose: 'return_path', required: false }));
  }
  if (context.inboundTarget) {
    records.push(record({ type: 'MX', host: domain, value: `10 ${context.inboundTarget}`, purpose: 'inbound', required: false }));
  }
  return records;
}

/** A TXT record's strings joined, as receivers read them (split 255-character strings become one). */
export const joinTxt = (strings: string[]) => strings.join('');

/** A tag list (`v=DKIM1; k=rsa; p=...`): tag names lower case, values trimmed; spaces around `;` and `=` ignored. */
export function tags(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    map.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return map;
}
