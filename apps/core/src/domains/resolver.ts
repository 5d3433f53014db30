import { promises as dns } from 'node:dns';
import { config } from '../config';

/** DNS answered "no such name" or "no record of that type": a definite answer that there is nothing. */
const EMPTY = new Set(['ENOTFOUND', 'ENODATA']);

/** A DNS server that did not give a definite answer (timeout, SERVFAIL, refused): nothing can be concluded. */
export class DnsUnavailable extends Error {
  constructor(
    readonly host: string,
    readonly type: string,
    readonly code: string,
  ) {
    super(`DNS did not answer for ${type} ${host} (${WORDS[code] ?? code})`);
  }
}

const WORDS: Record<string, string> = {
  ETIMEOUT: 'timed out',
  ESERVFAIL: 'SERVFAIL',
  EREFUSED: 'refused',
  ECONNREFUSED: 'connection refused',
  ECANCELLED: 'cancelled',
};

/** What a name resolves to for the checks: TXT strings of each record (not yet joined), MX hosts, addresses. */
export interface DnsLookup {
  txt(host: string): Promise<string[][]>;
  mx(host: string): Promise<{ exchange: string; priority: number }[]>;
  addresses(host: string): Promise<string[]>;
  /** dns.promises.resolve's shape, for mailauth's SPF evaluation: rejects with the resolver's own codes */
  raw(host: string, type: string): Promise<unknown[]>;
}

export interface ResolverOptions {
  servers?: { host: string; port: number }[] | null;
  timeoutMs?: number;
}

/**
 * The resolver of DNS checks (sending and tracking domains): DNS_SERVERS or the system's, DNS_TIMEOUT_MS a query, two
 * tries. `raw` rejects with the resolver's codes; `definite` answers [] for "nothing there" and throws DnsUnavailable
 * for any other failure.
 */
export function checkResolver(options: ResolverOptions = {}) {
  const servers = options.servers === undefined ? config().dnsServers : options.servers;
  const resolver = new dns.Resolver({ timeout: options.timeoutMs ?? config().dnsTimeoutMs, tries: 2 });
  if (servers?.length) resolver.setServers(servers.map((s) => (s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`)));
  const raw = (host: string, type: string) => resolver.resolve(host, type) as Promise<unknown[]>;
  const definite = async <T>(host: string, type: string): Promise<T[]> => {
    try {
      return (await raw(host, type)) as T[];
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
      if (EMPTY.has(code)) return [];
      throw new DnsUnavailable(host, type, code);
    }
  };
  return { raw, definite };
}

/**
 * A resolver for domain checks: the servers of DNS_SERVERS (host:port, tried in turn) or the system's, each query
 * bounded by DNS_TIMEOUT_MS (two tries). "Nothing there" is an empty answer; any other failure throws DnsUnavailable.
 */
export function dnsLookup(options: ResolverOptions = {}): DnsLookup {
  const { raw, definite } = checkResolver(options);
  return {
    txt: (host) => definite<string[]>(host, 'TXT'),
    mx: (host) => definite<{ exchange: string; priority: number }>(host, 'MX'),
    addresses: async (host) => [...(await definite<string>(host, 'A')), ...(await definite<string>(host, 'AAAA'))],
    raw,
  };
}
