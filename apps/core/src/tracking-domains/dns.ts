import type { CaaRecord } from 'node:dns';
import { checkResolver, type ResolverOptions } from '../domains/resolver';

/** The lookups a tracking domain's check makes: its CNAME, and the CAA records of it and its parents. */
export interface TrackingDns {
  cname(host: string): Promise<string[]>;
  caa(host: string): Promise<CaaRecord[]>;
}

/** Through DNS_SERVERS (or the system's), DNS_TIMEOUT_MS a query, as sending domains are checked. */
export function trackingDns(options: ResolverOptions = {}): TrackingDns {
  const { definite } = checkResolver(options);
  return {
    cname: async (host) => (await definite<string>(host, 'CNAME')).map((t) => t.toLowerCase().replace(/\.$/, '')),
    caa: (host) => definite<CaaRecord>(host, 'CAA'),
  };
}

/**
 * May the CA with these CAA identities issue for `name` (RFC 8659)? The relevant record set is the first found at the
 * name or a parent, up to the top-level domain; it allows the CA when one of its `issue` properties names one of the
 * identities (an `issue ";"` names none). No record set, or one without `issue`: any CA may. Returns why not, or null.
 */
export async function caaRefusal(lookup: TrackingDns, name: string, identities: string[]): Promise<string | null> {
  const labels = name.split('.');
  for (let i = 0; i < labels.length - 1; i++) {
    const at = labels.slice(i).join('.');
    const records = await lookup.caa(at);
    if (!records.length) continue;
    const issuers = records.filter((r) => r.issue !== undefined).map((r) => r.issue!.split(';')[0]!.trim().toLowerCase());
    if (!issuers.length) return null;
    if (issuers.some((issuer) => identities.includes(issuer))) return null;
    const allowed = issuers.filter(Boolean);
    const ca = identities.length ? identities.join(', ') : 'the CA (its CAA identity is unknown: set ACME_CAA_IDENTITIES)';
    return `CAA at ${at} ${allowed.length ? `allows only ${allowed.join(', ')}` : 'allows no CA'}: ${ca} may not issue for ${name}; add a CAA issue record for it`;
  }
  return null;
}
