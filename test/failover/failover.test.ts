import { createDb, rawQuery, type Db } from '../../apps/core/src/db';
import { parseHosts } from '../../apps/core/src/failover';
import { migrate } from '../../apps/core/src/migrate';
import { PgCluster, type PgServer } from '../helpers/pg-cluster';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * DATABASE_URL with several hosts (docs/deploy.md, "Postgres with a standby (failover)"): the service writes to the one that
 * accepts writes, and after the primary dies and its standby is promoted, the same pool writes to the new primary
 * without a restart. Two real Postgres 15 servers: a primary and a streaming standby made with pg_basebackup.
 */
jest.setTimeout(180_000);

let cluster: PgCluster;
let primary: PgServer;
let standby: PgServer;
let db: Db | undefined;

beforeAll(async () => {
  cluster = new PgCluster();
  primary = cluster.primary(await freePort());
  standby = cluster.standby(primary, await freePort());
});

afterAll(async () => {
  await db?.$disconnect();
  cluster.destroy();
});

it('reads the hosts of a URL that lists several', () => {
  const { hosts, urlFor } = parseHosts('postgresql://u:p@h1:5432,h2:5433,[::1]/mail?sslmode=disable');
  expect(hosts).toEqual([
    { host: 'h1', port: 5432 },
    { host: 'h2', port: 5433 },
    { host: '[::1]', port: 5432 },
  ]);
  expect(urlFor(hosts[1]!)).toBe('postgresql://u:p@h2:5433/mail?sslmode=disable');
});

it('migrates and writes on the primary whichever host is listed first, and follows a promotion without a restart', async () => {
  // the standby first: the service must still find the primary
  const url = `postgresql://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/mail`;
  await migrate(url);
  db = createDb(url, 4, false);
  const account = async () => (await rawQuery<{ id: number }>(db!, `INSERT INTO accounts (name) VALUES ('failover') RETURNING id`))[0]!.id;
  const server = async () => (await rawQuery<{ port: number }>(db!, 'SELECT current_setting(\'port\')::int AS port'))[0]!.port;
  expect(await account()).toBe(1);
  expect(await server()).toBe(primary.port);
  // the standby has it too (streaming)
  await waitFor(async () => {
    const standbyDb = createDb(`${standby.url}/mail`, 1, false);
    try {
      return (await rawQuery<{ n: number }>(standbyDb, 'SELECT count(*)::int AS n FROM accounts'))[0]!.n === 1;
    } finally {
      await standbyDb.$disconnect();
    }
  }, { timeout: 20_000 });

  primary.kill();
  standby.promote();
  const promoted = Date.now();
  // the pool's connections to the dead primary fail; the next ones go to the promoted standby
  await waitFor(async () => {
    try {
      await account();
      return true;
    } catch {
      return false;
    }
  }, { timeout: 30_000, interval: 200 });
  expect(Date.now() - promoted).toBeLessThan(30_000);
  expect(await server()).toBe(standby.port);
  expect((await rawQuery<{ n: number }>(db, 'SELECT count(*)::int AS n FROM accounts'))[0]!.n).toBeGreaterThanOrEqual(2);
});
