import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from '../../../generated/prisma/client';
import { config } from './config';
import { firstHostUrl, followingClient } from './failover';
import { dependencies, isDatabaseUnavailable } from './outage';

export type Db = PrismaClient;
/** A client or the client of an interactive transaction: domain functions accept either. */
export type Tx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

/** The pg pool under each client: Prisma and the hot raw statements share its connections. */
const pools = new WeakMap<Db, Pool>();
/** Pools behind a transaction pooler: a named statement prepared on one server connection is unknown on the next. */
const unnamed = new WeakSet<Pool>();

/**
 * Each client's second pool, opened on first use, whose sessions plan a named statement once and keep that plan
 * (`plan_cache_mode=force_generic_plan`): for the accept and sign-up statements (sending/ and subscribers/repository.ts)
 * and the worker's claim and "sent" mark (delivery/repository.ts). Postgres's own choice kept planning them anew on
 * every execution where their batches were small: a plan for one send is estimated cheaper than the kept plan (made for
 * arrays of ten), so a lone client's every send paid the planning of a statement of eleven steps, half of its time in
 * Postgres (bench/README.md, accept at one connection); in the delivery bench the claim was planned at 342 of 541
 * executions (0.8 ms each) and the mark at 102 of 677 (2.2 ms each). Only the statements that ask for it run here:
 * Prisma's unnamed ones would be planned generically too.
 */
const planOnce = new WeakMap<Db, { open: () => Pool; pool?: Pool }>();
/**
 * the statements in flight at once: in an API, two accepts (sending/write.ts), a sign-up (subscribers/fast-add.ts), a
 * batch request's; in a worker, a claim and a "sent" mark (delivery/fast-claim.ts)
 */
const PLANNED_ONCE_CONNECTIONS = 4;

export function createDb(url = config().databaseUrl, max = 10, pooled = url === config().databaseUrl && config().databaseTransactionPooling): Db {
  // several hosts (a primary and its standbys): each connection goes to the one that accepts writes (failover/); both
  // pools of the client follow it with one view of which host that is, so a failover is told once
  const following = followingClient(url);
  const pool = openPool(url, following, max, pooled, []);
  if (pooled) unnamed.add(pool);
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(client, pool);
  // a transaction pooler keeps no named statement, so none is planned once: there every statement is planned anew
  if (!pooled) planOnce.set(client, { open: () => openPool(url, following, PLANNED_ONCE_CONNECTIONS, false, ['plan_cache_mode=force_generic_plan']) });
  return client;
}

/**
 * A pg pool as the service opens them, its sessions with `settings` (startup options) beside JIT off.
 * JIT off: our statements are short and planned for small row counts, but a claim over a large table can cross
 * jit_above_cost and spend 50 ms compiling what then runs in 2 (the scheduler's claim: bench/README.md). A
 * transaction pooler refuses startup options: there `ALTER DATABASE ... SET jit = off` does it (docs/deploy.md).
 */
function openPool(url: string, following: ReturnType<typeof followingClient>, max: number, pooled: boolean, settings: string[]): Pool {
  const options = ['jit=off', ...settings].map((setting) => `-c ${setting}`).join(' ');
  const pool = new Pool({ connectionString: firstHostUrl(url), max, ...(pooled ? {} : { options }), ...(following ? { Client: following } : {}) });
  pool.on('error', (err) => {
    // an idle connection dropped by the server; the pool replaces it (a stopped server: one warn line, not one a client)
    if (isDatabaseUnavailable(err)) dependencies.down('postgres', err);
  });
  // a statement completed: Postgres answers again (when it was away, the info line says for how long). Not a new
  // connection: behind PgBouncer one is made while Postgres is still away, and the watch would flap with each request.
  pool.on('connect', (client) => client.connection.on('commandComplete', () => dependencies.up('postgres')));
  return pool;
}

/**
 * A parameterised statement ($1, $2...) straight on the pool, for the few statements on the send path where Prisma's
 * own cost per query shows (about 0.7 ms of CPU against 0.1 ms; bench/README.md). With a `name`, each connection
 * prepares it once; Postgres then plans each execution anew or keeps one plan, as it estimates best (`plan` 'chosen'),
 * or keeps one plan always (`plan` 'once': planOnce). Behind a transaction pooler (DATABASE_TRANSACTION_POOLING) the
 * name is dropped and each statement planned anew. Given a transaction client, it runs inside that transaction through
 * Prisma instead.
 */
export async function rawQuery<T>(db: Tx, text: string, values: unknown[] = [], name?: string, plan: 'once' | 'chosen' = 'chosen'): Promise<T[]> {
  const pool = plan === 'once' && name ? plannedOncePool(db as Db) : pools.get(db as Db);
  if (pool) return (await pool.query({ text, values, name: unnamed.has(pool) ? undefined : name })).rows as T[];
  return db.$queryRawUnsafe<T[]>(text, ...values);
}

/** The client's pool that plans named statements once (planOnce), or its own pool where it has none. */
function plannedOncePool(client: Db): Pool | undefined {
  const second = planOnce.get(client);
  if (!second) return pools.get(client);
  second.pool ??= second.open();
  return second.pool;
}

/** A parameterised statement of a poolTransaction, on the transaction's connection. */
export type PoolQuery = <T>(text: string, values: unknown[]) => Promise<T[]>;

/**
 * A transaction on one connection of the pool, its statements run by `query`, committed when `work` resolves and
 * rolled back when it throws: for the hot transactions where Prisma's own cost per statement and per row returned
 * shows (the scheduler's claim of 500 rows a tick). A transaction left idle longer than `idleSeconds` (its work waiting
 * on something else) is ended by Postgres, its connection with it, as Prisma's transaction timeout ended it.
 */
export async function poolTransaction<T>(db: Db, work: (query: PoolQuery) => Promise<T>, idleSeconds = 30): Promise<T> {
  const pool = pools.get(db);
  if (!pool) return db.$transaction((tx) => work((text, values) => tx.$queryRawUnsafe(text, ...values)), { timeout: idleSeconds * 1000 });
  const client = await pool.connect();
  const query: PoolQuery = async <R>(text: string, values: unknown[]) => (await client.query(text, values)).rows as R[];
  let broken: Error | undefined;
  // the server may end the connection while the work holds it (the idle deadline, a restart): the error is the
  // checked-out client's to report, and a client with no listener would take the process down with it
  const onError = (err: Error) => (broken = err);
  client.on('error', onError);
  try {
    await client.query(`BEGIN; SET LOCAL idle_in_transaction_session_timeout = '${Math.round(idleSeconds)}s'`);
    const result = await work(query);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw err;
  } finally {
    // a connection that could not roll back is closed, not handed to the next caller mid-transaction
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** Ends a client made by createDb, and its pool. */
export async function closeClient(client: Db): Promise<void> {
  await client.$disconnect();
  await pools.get(client)?.end();
  await planOnce.get(client)?.pool?.end();
}

let shared: Db | undefined;

/** The process's database client, made on first use. */
export function db(): Db {
  shared ??= createDb();
  return shared;
}

export async function closeDb(): Promise<void> {
  if (shared) {
    const client = shared;
    shared = undefined;
    await closeClient(client);
  }
}

export { Prisma } from '../../../generated/prisma/client';
