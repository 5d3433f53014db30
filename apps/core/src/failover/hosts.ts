/** The hosts of a Postgres URL that may list several (failover/index.ts): plain text work, no connection. */

export interface PgHost {
  host: string;
  port: number;
}

const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/;

/** The hosts of a Postgres URL (one or several, comma-separated, each with its port or 5432) and a one-host URL for each. */
export function parseHosts(url: string): { hosts: PgHost[]; urlFor: (host: PgHost) => string } {
  const parts = URL_PARTS.exec(url);
  if (!parts) return { hosts: [], urlFor: () => url };
  const hosts = parts[3]!
    .split(',')
    .filter(Boolean)
    .map((h) => {
      const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(h);
      return { host: m ? m[1]! : h, port: m?.[2] ? Number(m[2]) : 5432 };
    });
  return { hosts, urlFor: (h) => `${parts[1]}${parts[2] ?? ''}${h.host}:${h.port}${parts[4]}` };
}

/** The URL with only its first host: for validation and for what must name one server. */
export function firstHostUrl(url: string): string {
  const { hosts, urlFor } = parseHosts(url);
  return hosts.length > 1 ? urlFor(hosts[0]!) : url;
}
