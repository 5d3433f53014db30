import { DnsUnavailable, type DnsLookup } from '../domains/resolver';

/**
 * Where a domain's mail goes, as DNS says: `mx` (its MX hosts, by preference), `a` (no MX but an address: RFC 5321
 * section 5.1's implicit MX, the domain itself), `null_mx` (a single MX of "." : RFC 7505, it takes no mail), `none`
 * (neither), or `timeout` (the DNS did not give a definite answer; nothing can be concluded, and nothing is cached).
 */
export type MailRoute = { mx: 'mx' | 'a'; hosts: string[] } | { mx: 'null_mx' | 'none'; hosts: [] } | { mx: 'timeout'; hosts: []; error: string };

export async function mailRoute(dns: DnsLookup, domain: string): Promise<MailRoute> {
  try {
    const records = await dns.mx(domain);
    // Node answers "." as an empty exchange
    if (records.some((r) => r.exchange === '' || r.exchange === '.')) return { mx: 'null_mx', hosts: [] };
    if (records.length) {
      const hosts = [...records].sort((a, b) => a.priority - b.priority).map((r) => r.exchange.toLowerCase().replace(/\.$/, ''));
      return { mx: 'mx', hosts: [...new Set(hosts)] };
    }
    if ((await dns.addresses(domain)).length) return { mx: 'a', hosts: [domain] };
    return { mx: 'none', hosts: [] };
  } catch (err) {
    if (err instanceof DnsUnavailable) return { mx: 'timeout', hosts: [], error: err.message };
    throw err;
  }
}
