/**
 * The service under the bench: waiting for it, its admin API (a tenant with a key and a mailbox, DKIM-signed or
 * not), the sink's count, and the database settled before each timed load.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import { ADMIN_TOKEN, PG_SERVER, PORTS } from './settings';

/**
 * Before each timed load, as pgbench does (it vacuums and analyses first): the phase's database analysed, then a
 * checkpoint.
 * - ANALYZE: each phase has a fresh database, filled by its own warm-up seconds before the clock starts, and its
 *   services' prepared statements were planned on empty tables. Autovacuum would analyse them within a minute, and
 *   Postgres then re-plans every cached plan (as it does in a running service); a 15-second phase ends first, so it
 *   measured plans for empty tables: the "sent" mark scanned the whole messages table, the subscriber add the whole
 *   subscribers table (seen with auto_explain). ANALYZE measures the service as it runs after its first minute.
 * - CHECKPOINT: the dirty pages of a phase (or of an earlier run's 100,000-row phases) are written now, not in the
 *   middle of the next measurement, where the flush and the full-page images that follow a checkpoint cost the write
 *   paths a quarter of their throughput.
 */
export async function settle(databaseUrl?: string): Promise<void> {
  await withPg(databaseUrl ?? `${PG_SERVER}/postgres`, async (pg) => {
    if (databaseUrl) await pg.query('ANALYZE');
    await pg.query('CHECKPOINT'); // the whole cluster's, from any database
  });
}

/** Postgres's own counters for one database (pg_stat_database), read after a pause so the backends have reported. */
export async function pgCounters(databaseUrl: string): Promise<Record<'transactions' | 'inserted' | 'updated' | 'deleted' | 'fetched', number>> {
  await new Promise((r) => setTimeout(r, 1_100));
  return withPg(databaseUrl, async (pg) => {
    const { rows } = await pg.query(
      `SELECT (xact_commit + xact_rollback)::float8 AS transactions, tup_inserted::float8 AS inserted, tup_updated::float8 AS updated,
              tup_deleted::float8 AS deleted, tup_fetched::float8 AS fetched
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    return rows[0];
  });
}

/** One connection to `url` for the length of `use`. */
async function withPg<T>(url: string, use: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: url });
  await pg.connect();
  try {
    return await use(pg);
  } finally {
    await pg.end();
  }
}

export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const up = (port: number, p = '/healthz') => until(async () => (await fetch(`http://127.0.0.1:${port}${p}`)).ok, 60_000, `port ${port}`);

export async function admin<T>(pathname: string, body: unknown, method = 'POST'): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${PORTS.api}/admin/api${pathname}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== (method === 'POST' ? 201 : 200)) throw new Error(`bench: admin ${method} ${pathname} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

export interface Tenant {
  token: string;
  account: number;
  mailbox: number;
}

/**
 * The delivery phase's DKIM key: both sides sign every email with it, our worker through the mailbox's `dkim` setting,
 * the baseline through nodemailer's own `dkim` option (RSA 2048, relaxed/relaxed, as receivers see most mail).
 */
export const BENCH_DKIM = (() => {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { domain: 'example.com', selector: 'bench', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
})();

export async function makeTenant(smtpPort = PORTS.sinkSmtp, options: { dkim?: boolean } = {}): Promise<Tenant> {
  const { account } = await admin<{ account: { id: number } }>('/accounts', { name: 'bench' });
  const { mailbox } = await admin<{ mailbox: { id: number } }>('/mailboxes', {
    account: account.id,
    address: 'bench@example.com',
    smtp: `smtp://127.0.0.1:${smtpPort}`,
    daily_limit: 100_000,
    gap_seconds: 0,
    ...(options.dkim ? { dkim: BENCH_DKIM } : {}),
  });
  const { key } = await admin<{ key: { token: string } }>('/keys', {
    account: account.id,
    name: 'bench',
    mailbox: mailbox.id,
    daily_limit: 10_000_000,
    prospects: true,
  });
  return { token: key.token, account: account.id, mailbox: mailbox.id };
}


export const sendBody = JSON.stringify({ to: 'reader@example.com', subject: 'Benchmark', text: 'Hello from the benchmark.' });
export const jsonHeaders = (token?: string) => ({ 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) });

export async function sinkCount(): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/count`)).json()) as { count: number }).count;
}

/** How many of the emails the sink counted carry a DKIM-Signature header. */
export async function sinkSigned(): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/count`)).json()) as { signed: number }).signed;
}

/** The sink forgets what it counted (before a timed window). */
export async function resetSink(): Promise<void> {
  await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
}
