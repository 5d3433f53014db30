import { Queue } from 'bullmq';
import { Redis, ReplyError, type RedisOptions } from 'ioredis';
import { Pool } from 'pg';
import { config } from '../../apps/core/src/config';
import { createDb, db, type Db } from '../../apps/core/src/db';
import { BadRequest } from '../../apps/core/src/errors';
import { isDatabaseUnavailable, isRedisConnectionError, isRedisStateLost } from '../../apps/core/src/outage';
import { PgBouncer } from '../helpers/pgbouncer';
import { PgProxy } from '../helpers/pg-proxy';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * outage.ts decides by the error's class and code: each case here is the error the library really gives (pg, Prisma
 * through its pg adapter, ioredis, BullMQ), and errors whose words say "outage" without being one are not taken for one.
 */

/** The error `work` rejects with. */
async function failure(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('Postgres unreachable or going away', () => {
  const proxy = new PgProxy();
  const pools: Pool[] = [];
  const clients: Db[] = [];
  const pool = (url: string) => {
    const p = new Pool({ connectionString: url });
    p.on('error', () => undefined);
    pools.push(p);
    return p;
  };
  const prisma = (url: string) => {
    const client = createDb(url);
    clients.push(client);
    return client;
  };
  beforeAll(() => proxy.start());
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.$disconnect().catch(() => undefined)));
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await proxy.stop();
  });

  it('a closed port: the system error of pg, the codes and driver-adapter kinds of Prisma', async () => {
    const closed = `postgresql://postgres@127.0.0.1:${await freePort()}/nowhere`;
    const raw = await failure(() => pool(closed).query('SELECT 1'));
    expect(raw).toMatchObject({ code: 'ECONNREFUSED' });
    const client = prisma(closed);
    const model = await failure(() => client.account.findFirst());
    const statement = await failure(() => client.$queryRawUnsafe('SELECT 1'));
    const transaction = await failure(() => client.$transaction(async (tx) => tx.account.count()));
    for (const err of [raw, model, statement, transaction]) expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('a backend terminated (pg_terminate_backend): SQLSTATE 57P01 from pg and under Prisma', async () => {
    const url = process.env.DATABASE_URL!;
    // once the statement runs, its backend is terminated
    const terminate = async (marker: string) => {
      const sql = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%${marker}%' AND pid <> pg_backend_pid()`;
      while ((await db().$queryRawUnsafe<unknown[]>(sql)).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const [raw] = await Promise.all([failure(() => pool(url).query("SELECT pg_sleep(10), 'victim-raw'")), terminate('victim-raw')]);
    expect(raw).toMatchObject({ code: '57P01' });
    const [viaPrisma] = await Promise.all([failure(() => prisma(url).$queryRawUnsafe("SELECT pg_sleep(10), 'victim-prisma'")), terminate('victim-prisma')]);
    expect(isDatabaseUnavailable(raw)).toBe(true);
    expect(isDatabaseUnavailable(viaPrisma)).toBe(true);
  });

  it("the connection cut under a statement and refused after: pg's one text-only error, from pg and under Prisma", async () => {
    const rawPool = pool(proxy.url());
    const client = prisma(proxy.url());
    await rawPool.query('SELECT 1');
    await client.$queryRawUnsafe('SELECT 1');
    setTimeout(() => proxy.cutOff(), 300);
    const [raw, viaPrisma] = await Promise.all([failure(() => rawPool.query('SELECT pg_sleep(5)')), failure(() => client.$queryRawUnsafe('SELECT pg_sleep(5)'))]);
    const refused = await failure(() => client.account.count());
    proxy.restore();
    for (const err of [raw, viaPrisma, refused]) expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('is not fooled by words: a refused statement or our own refusal saying the same is no outage', async () => {
    const raised = await failure(() => db().$executeRawUnsafe(`DO $$ BEGIN RAISE EXCEPTION 'Connection terminated unexpectedly'; END $$`));
    const syntax = await failure(() => pool(process.env.DATABASE_URL!).query('SELEC 1'));
    expect(isDatabaseUnavailable(raised)).toBe(false);
    expect(isDatabaseUnavailable(syntax)).toBe(false);
    expect(isDatabaseUnavailable(new BadRequest('the database system is shutting down'))).toBe(false);
    expect(isDatabaseUnavailable(new TypeError('Connection terminated unexpectedly'))).toBe(false);
  });
});

describe('Postgres away behind PgBouncer', () => {
  const proxy = new PgProxy();
  let bouncer: PgBouncer;
  const pools: Pool[] = [];
  let client: Db | undefined;
  beforeAll(async () => {
    await proxy.start();
    bouncer = new PgBouncer(proxy.port);
    await bouncer.start();
  });
  afterAll(async () => {
    await client?.$disconnect().catch(() => undefined);
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await bouncer.stop();
    await proxy.stop();
  });

  it("PgBouncer's own errors (SQLSTATE 08P01: server login failing, server conn crashed, query_wait_timeout), from pg and under Prisma", async () => {
    const pool = new Pool({ connectionString: bouncer.url() });
    pool.on('error', () => undefined);
    pools.push(pool);
    client = createDb(bouncer.url(), 2, true);
    await pool.query('SELECT 1');
    await client.$queryRawUnsafe('SELECT 1');
    // Postgres goes away behind the pooler, which stays up: each error after that is PgBouncer's word for it
    proxy.cutOff();
    const raw: unknown[] = [];
    const viaPrisma: unknown[] = [];
    for (let i = 0; i < 6; i++) {
      raw.push(await failure(() => pool.query('SELECT 1')));
      viaPrisma.push(await failure(() => client!.$queryRawUnsafe('SELECT 1')));
    }
    proxy.restore();
    expect(raw).toContainEqual(expect.objectContaining({ code: '08P01' }));
    for (const err of [...raw, ...viaPrisma]) expect(isDatabaseUnavailable(err)).toBe(true);
    // and once Postgres is back behind it, the same clients are served again
    await waitFor(() => pool.query('SELECT 1').then(() => true), { timeout: 10_000, what: 'PgBouncer serving again' });
  });
});

describe('Redis unreachable, or its state lost', () => {
  const redis: Redis[] = [];
  const connect = (port: number, options: RedisOptions = {}) => {
    const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50, ...options });
    client.on('error', () => undefined);
    redis.push(client);
    return client;
  };
  afterAll(() => redis.forEach((r) => r.disconnect()));

  it("a closed port: ioredis's MaxRetriesPerRequestError, its offline refusal, its closed connection", async () => {
    const port = await freePort();
    const retried = await failure(() => connect(port, { maxRetriesPerRequest: 0 }).get('x'));
    expect((retried as Error).name).toBe('MaxRetriesPerRequestError');
    const offline = connect(port, { enableOfflineQueue: false, lazyConnect: true });
    const notWritable = await failure(() => offline.get('x'));
    const ended = connect(port);
    ended.disconnect();
    const closed = await failure(() => ended.get('x'));
    for (const err of [retried, notWritable, closed]) expect(isRedisConnectionError(err)).toBe(true);
  });

  it("a reply error counts by Redis's error prefix: READONLY and LOADING are the server not serving, ERR is not", async () => {
    const refused = await failure(() => connect(6379).call('NO-SUCH-COMMAND'));
    expect(refused).toBeInstanceOf(ReplyError);
    expect(isRedisConnectionError(refused)).toBe(false);
    // as ioredis's parser makes them from the server's reply
    expect(isRedisConnectionError(new ReplyError("READONLY You can't write against a read only replica."))).toBe(true);
    expect(isRedisConnectionError(new ReplyError('LOADING Redis is loading the dataset in memory'))).toBe(true);
    expect(isRedisConnectionError(new ReplyError('ERR READONLY is not a command here'))).toBe(false);
    expect(isRedisConnectionError(new BadRequest('Connection is closed.'))).toBe(false);
  });

  it("a job whose keys Redis lost: BullMQ's error code, not its words", async () => {
    const queue = new Queue('outage-classes', { connection: { host: '127.0.0.1', port: 6379 }, prefix: `${config().redisPrefix}:bull` });
    try {
      const job = await queue.add('lost', {});
      await connect(6379).del(queue.toKey(job.id!));
      const lost = await failure(() => job.moveToCompleted('done', 'a-token', false));
      expect(lost).toMatchObject({ code: -1, message: expect.stringMatching(/^Missing key for job/) });
      expect(isRedisStateLost(lost)).toBe(true);
      expect(isRedisStateLost(new Error(`Missing key for job ${job.id}. moveToFinished`))).toBe(false);
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  });
});
