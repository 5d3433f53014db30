import crypto from 'node:crypto';
import { Client } from 'pg';
import { ensureDatabase, migrate } from '../../apps/core/src/migrate';
import { databaseUrl } from '../setup/shared';

/**
 * migrate connects to its target database first and uses the server's `postgres` database only to create a missing
 * target: a role that may reach only its own database (as on managed Postgres) migrates without touching `postgres`.
 */
const connected: string[] = [];
let spy: jest.SpyInstance;
beforeEach(() => {
  connected.length = 0;
  const original = Client.prototype.connect;
  spy = jest.spyOn(Client.prototype, 'connect').mockImplementation(function (this: Client & { database?: string }, ...args: unknown[]) {
    connected.push(this.database ?? '');
    return (original as unknown as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as never);
});
afterEach(() => spy.mockRestore());

it('an existing target: every connection is to the target, none to postgres', async () => {
  const target = process.env.MS_TEST_DATABASE!;
  expect(await ensureDatabase(databaseUrl(target))).toBe(false);
  await migrate(databaseUrl(target));
  expect(connected.length).toBeGreaterThan(0);
  expect(new Set(connected)).toEqual(new Set([target]));
});

it('a missing target: tried first, then created from postgres, then migrated', async () => {
  const name = `ms_migrate_probe_${crypto.randomBytes(4).toString('hex')}`;
  try {
    await migrate(databaseUrl(name));
    expect(connected[0]).toBe(name);
    expect(connected).toContain('postgres');
    expect(connected[connected.length - 1]).toBe(name);
  } finally {
    spy.mockRestore();
    const admin = new Client({ connectionString: databaseUrl('postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
});
