import net from 'node:net';
import { Client } from 'pg';
import { readMigrations } from '../../apps/core/src/migrate';
import { databaseUrl, runId } from '../setup/shared';
import { freePort, runAdmin, runTs, waitForHttp } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/** A database of this test run (the global teardown drops every ms_test_<run>_* database) that does not exist yet. */
const freshDatabase = (label: string) => `ms_test_${runId()}_${label}${Math.floor(Math.random() * 1e6)}`;

async function query<T extends object>(database: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('migrations', () => {
  it('two processes migrating a missing database at once: it is created once and each migration applied once', async () => {
    const name = freshDatabase('race');
    const env = { DATABASE_URL: databaseUrl(name) };
    const [a, b] = [runTs('scripts/migrate.ts', [], env), runTs('scripts/migrate.ts', [], env)];
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null; applied_steps_count: number }>(
      name,
      'SELECT migration_name, checksum, finished_at, applied_steps_count FROM _prisma_migrations ORDER BY migration_name',
    );
    expect(rows.map((r) => [r.migration_name, r.checksum])).toEqual(readMigrations().map((m) => [m.name, m.checksum]));
    expect(rows.every((r) => r.finished_at && r.applied_steps_count === 1)).toBe(true);
    const again = runTs('scripts/migrate.ts', [], env);
    expect(await again.exited).toBe(0);
    expect(again.stdout()).toContain('up to date');
  }, 60_000);
});

describe('starting with a bad configuration ends the process with one clear line', () => {
  it.each([
    ['an unreachable database', { DATABASE_URL: 'postgresql://postgres:hunter2@127.0.0.1:1/nowhere' }, /^api: cannot prepare the database at postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nowhere: .+$/],
    ['an unreachable Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, /^api: cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .+$/],
    ['a malformed DATABASE_URL', { DATABASE_URL: 'mysql://x' }, /^api: configuration error: DATABASE_URL must start with postgresql:\/\/ or postgres:\/\/$/],
    ['a bad PORT', { PORT: 'eighty' }, /^api: configuration error: PORT must be a whole number/],
    ['a weak admin token in production', { NODE_ENV: 'production', ADMIN_TOKEN: 'test-admin-token-0123456789' }, /^api: configuration error: ADMIN_TOKEN must be at least 32 random characters, it has 27 /],
  ])('%s', async (_what, env, line) => {
    const proc = runTs('apps/api/src/server.ts', [], { DATABASE_URL: process.env.DATABASE_URL, ...env });
    expect(await proc.exited).toBe(1);
    const lines = proc.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
    expect(proc.stderr()).not.toContain('hunter2');
  }, 30_000);

  // PORT: Express 5 hands the error to listen's callback (not a process without a socket); HTTPS_PORT (tracking
  // domains): an 'error' event (not a crash with a stack). Each: one line and exit 1.
  it.each([
    ['PORT', 'port', async (held: number) => ({ PORT: String(held) })],
    ['HTTPS_PORT', 'HTTPS_PORT', async (held: number) => ({ PORT: String(await freePort()), HTTPS_PORT: String(held) })],
  ])('a %s another process listens on', async (_setting, named, env) => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const proc = runTs('apps/api/src/server.ts', [], { DATABASE_URL: process.env.DATABASE_URL, ...(await env(port)) });
      expect(await proc.exited).toBe(1);
      expect(proc.stderr().trim().split('\n')).toEqual([`api: cannot listen on ${named} ${port}: listen EADDRINUSE: address already in use :::${port}`]);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 30_000);
});

describe('the API process', () => {
  it('creates and migrates its database, answers /healthz, keeps secrets out of its logs and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const name = freshDatabase('api');
    const password = 'Sup3r-Secret-Pw-91c2';
    const proc = runTs('apps/api/src/server.ts', [], { PORT: String(port), DATABASE_URL: databaseUrl(name), LOG_LEVEL: 'debug' });
    try {
      await waitForHttp(proc, `http://127.0.0.1:${port}/healthz`);
      // ready follows alive: each probe waits 800 ms for Postgres, whose first connection may take longer on a busy host
      await waitFor(async () => ((await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { ok: boolean }).ok, { timeout: 15_000, what: 'ready' });
      const admin = { Authorization: `Bearer ${process.env.ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
      const account = (await (await fetch(`http://127.0.0.1:${port}/admin/api/accounts`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'a' }) })).json()) as { account: { id: number } };
      const created = await fetch(`http://127.0.0.1:${port}/admin/api/mailboxes`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ account: account.account.id, address: 'me@example.com', smtp: `smtp://me:${password}@127.0.0.1:2525` }),
      });
      expect(created.status).toBe(201);
      expect(await created.text()).not.toContain(password);
      // a failing request logs too: the password must not leak through the error path either
      await fetch(`http://127.0.0.1:${port}/admin/api/mailboxes`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ account: account.account.id, address: 'me@example.com', smtp: `smtp://me:${password}@127.0.0.1:2525` }),
      });
      const dump = JSON.stringify(await query(name, 'SELECT * FROM mailboxes'));
      expect(dump).not.toContain(password);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toMatch(/"msg":"request"/);
    expect(proc.stdout() + proc.stderr()).not.toContain(password);
    expect(proc.stdout() + proc.stderr()).not.toContain(process.env.ADMIN_TOKEN!);
  }, 60_000);
});

describe('npm run admin', () => {
  it('creates an account, a mailbox and a key (token printed once), lists and revokes keys', async () => {
    const account = await runAdmin('account', 'create', '--name', 'CLI Co');
    expect(account.out).toEqual({ ok: true, account: { id: expect.any(Number), name: 'CLI Co' } });
    const mailbox = await runAdmin('mailbox', 'create', '--account', String(account.out.account.id), '--address', 'cli@example.com', '--smtp', 'smtp://u:cli-pw-123@127.0.0.1:2525');
    expect(mailbox.out.mailbox).toMatchObject({ address: 'cli@example.com', daily_limit: 50 });
    expect(JSON.stringify(mailbox.out)).not.toContain('cli-pw-123');
    const key = await runAdmin('key', 'create', '--account', String(account.out.account.id), '--name', 'site', '--mailbox', String(mailbox.out.mailbox.id), '--daily-limit', '100', '--prospects');
    expect(key.out.key).toMatchObject({ token: expect.stringMatching(/^msk_/), prospects: true, daily_limit: 100 });
    const listed = await runAdmin('key', 'list');
    expect(JSON.stringify(listed.out)).not.toContain(key.out.key.token);
    const revoked = await runAdmin('key', 'revoke', String(key.out.key.id));
    expect(revoked.out.key.revoked_at).toEqual(expect.any(String));
    const bad = await runAdmin('key', 'create', '--name', 'x');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.err)).toEqual({ ok: false, error: expect.stringContaining('account') });
  }, 60_000);
});
