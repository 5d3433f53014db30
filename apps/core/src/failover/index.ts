import { Client, DatabaseError, type ClientConfig } from 'pg';
import { dependencies, isDatabaseUnavailable } from '../outage';
import { parseHosts, type PgHost } from './hosts';
import { acceptsWrites } from './repository';

export { firstHostUrl, parseHosts, type PgHost } from './hosts';

/**
 * Postgres with a standby (docs/deploy.md, "Postgres with a standby (failover)"): DATABASE_URL may list several
 * hosts (`postgresql://user:pw@h1:5432,h2:5433/db`), as libpq's multi-host URLs do. node-postgres has no multi-host
 * support, so the pool's connections are made by FollowingClient: each new connection goes to the host that accepts
 * writes (`pg_is_in_recovery()` false). After a failover the old primary's connections fail and are dropped by the
 * pool, the next ones look for the new primary; a connection that finds its server read-only (a demoted primary still
 * up: SQLSTATE 25006) is closed so the pool makes a new one. No restart.
 */

const TIMEOUT_MS = 3_000;

async function probe(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await acceptsWrites(client);
  } catch (err) {
    // 3D000: the database is not made yet (migrate makes it): ask the server's maintenance database
    if ((err as { code?: string }).code === '3D000' && !/\/postgres(\?|$)/.test(url)) return probe(url.replace(/^([^/]*\/\/[^/?#]*)\/[^?#]*/, '$1/postgres'));
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The one-host URL of the server that accepts writes, trying the hosts in order; the URL itself when it has one host. */
export async function writableUrl(url: string): Promise<string> {
  const { hosts, urlFor } = parseHosts(url);
  if (hosts.length < 2) return url;
  for (const host of hosts) if (await probe(urlFor(host))) return urlFor(host);
  throw noPrimary(hosts);
}

/** SQLSTATEs that say a connection's server no longer takes writes or is going away. */
const LEAVE = new Set(['25006', '57P01', '57P02', '57P03']);

/**
 * No host accepts writes (the primary lost, its standby not promoted yet): an outage like a server that refuses
 * connections (SQLSTATE 08001, sqlclient_unable_to_establish_sqlconnection), so the API answers 503 with Retry-After and
 * a worker keeps its marks (outage.ts), not an internal error.
 */
function noPrimary(hosts: PgHost[]): DatabaseError {
  const err = new DatabaseError(`no host of DATABASE_URL accepts writes (${hosts.map(named).join(', ')})`, 0, 'error');
  err.code = '08001';
  err.severity = 'FATAL';
  return err;
}

const named = (h: PgHost) => `${h.host}:${h.port}`;

/**
 * The pool's Client for a URL with several hosts (null for one host: the plain Client). Each instance connects to the
 * primary: the one found last while no connection to it has failed since, else the first host a probe finds writable.
 * A failover makes one warn line (the dependency watch's "postgres is unreachable") and one info line ("postgres is
 * back", with the primary it moved to), whatever the number of connections that saw it.
 */
export function followingClient(url: string): (new (config?: ClientConfig) => Client) | null {
  const { hosts, urlFor } = parseHosts(url);
  if (hosts.length < 2) return null;
  // the process's view of which host is the primary, shared by the connections of the pools given this class (a
  // client's two pools, db.ts: one view); `found` once a primary was found: the first one found is where the service
  // starts, not a move
  const view = { current: hosts[0]!, trusted: false, found: false };
  const distrust = (host: PgHost) => {
    if (host === view.current) view.trusted = false;
  };

  const find = async (): Promise<PgHost> => {
    for (const host of [view.current, ...hosts.filter((h) => h !== view.current)]) {
      if (await probe(urlFor(host))) {
        if (host !== view.current && view.found) {
          // the old primary's connections may have failed quietly (idle ones): the move is an outage all the same
          dependencies.down('postgres');
          dependencies.note('postgres', { primary: named(host), was: named(view.current) });
        }
        view.current = host;
        view.trusted = view.found = true;
        return host;
      }
    }
    throw noPrimary(hosts);
  };

  class FollowingClient extends Client {
    private server: PgHost = view.current;

    constructor(config?: ClientConfig) {
      super({ ...config, connectionString: urlFor(view.current) });
    }

    private noteError(err: unknown): void {
      const code = (err as { code?: string }).code;
      if (code && LEAVE.has(code)) {
        distrust(this.server);
        // closed, so the pool drops it on release instead of handing out a connection to a server that refuses writes
        void this.end().catch(() => undefined);
      } else if (isDatabaseUnavailable(err)) distrust(this.server);
    }

    // pg-pool calls connect(callback); a caller may await it
    override connect(callback?: ((err: Error) => void) | ((err: null, c: Client) => void)): never {
      const connecting = (async () => {
        const host = view.trusted ? view.current : await find();
        this.server = host;
        const self = this as unknown as { host: string; port: number; connectionParameters: PgHost };
        self.host = self.connectionParameters.host = host.host;
        self.port = self.connectionParameters.port = host.port;
        this.on('error', () => distrust(host));
        // a refused or failed connection (the primary's host lost while the pool had no connection to it): look again
        // next time, not at the same host for ever
        await super.connect().catch((err: unknown) => {
          distrust(host);
          throw err;
        });
        if (!(await acceptsWrites(this))) {
          distrust(host);
          await this.end().catch(() => undefined);
          throw noPrimary([host]);
        }
      })();
      if (callback) {
        const done = callback as (err: Error | null, c?: Client) => void;
        connecting.then(() => done(null, this), (err: Error) => done(err));
        return undefined as never;
      }
      return connecting as never;
    }

    override query(...args: unknown[]): never {
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        args[args.length - 1] = (err: Error | null, result: unknown) => {
          if (err) this.noteError(err);
          (last as (e: Error | null, r: unknown) => void)(err, result);
        };
        return (super.query as (...a: unknown[]) => never)(...args);
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result && typeof (result as Promise<unknown>).catch === 'function') (result as Promise<unknown>).catch((err) => this.noteError(err));
      return result as never;
    }
  }
  return FollowingClient;
}
