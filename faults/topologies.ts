/**
 * The fault suite's scenarios on production topologies (docs/deploy.md): Postgres behind PgBouncer in transaction
 * mode, Redis as a Cluster of 3 primaries, Redis under Sentinel with its primary killed. Each starts its own servers
 * from Debian's packages (pgbouncer, redis-server, redis-sentinel), installing those missing with apt-get when run as
 * root, and points the world's processes at them before they start (`setup`). Used by faults/run.ts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { groupAlive, killGroup } from '../test/helpers/processes';
import { webhookReceiver, webhookWorkload } from './webhooks';

/** What a scenario here needs of run.ts's world and helpers. */
export interface WorldLike {
  name: string;
  env: Record<string, string>;
  workers: { child: ChildProcess }[];
  apis: { service: { child: ChildProcess }; port: number }[];
  workerCount: number;
  startWorker: () => unknown;
  sink: { smtpPort: number; httpPort: number };
}

export interface Kit<W extends WorldLike, A, D> {
  tmp: string;
  asRoot: boolean;
  pgPort: () => number;
  freePort: () => Promise<number>;
  until: <T>(check: () => Promise<T | false | null | undefined>, timeoutMs: number, what: string, interval?: number) => Promise<T>;
  sleep: (ms: number) => Promise<unknown>;
  log: (...parts: unknown[]) => void;
  load: (world: W, count: number, from?: number, concurrency?: number) => Promise<A[]>;
  accepted: (answers: A[]) => string[];
  drained: (sink: W['sink'], ids: string[], timeoutMs: number) => Promise<number | null>;
  delivery: (sink: W['sink'], ids: string[]) => Promise<D & { accepted: number; delivered: number; duplicates: number; lost: number }>;
  deliveredCount: (sink: W['sink']) => Promise<number>;
  summarizeAnswers: (answers: A[]) => unknown;
  sends: number;
  logsDir: string;
}

export interface TopologyScenario<W> {
  apis: number;
  workers: number;
  drainFirst?: boolean;
  /** before the world's APIs start: start the servers and point world.env at them */
  setup: (world: W) => Promise<void>;
  /** after the scenario, whatever happened */
  teardown: () => Promise<void>;
  run: (world: W) => Promise<{
    accepted: number;
    delivered: number;
    duplicates: number;
    lost: number;
    drainSeconds: number | null;
    duringFault: unknown;
    target: string;
    met: boolean;
  }>;
}

/** Debian packages the scenarios need, installed when missing (as root; otherwise the scenario fails saying so). */
function ensurePackages(binaries: Record<string, string>): void {
  const missing = Object.entries(binaries).filter(([bin]) => {
    try {
      execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  if (process.getuid?.() !== 0) throw new Error(`install ${packages.join(' ')} first (apt-get install -y ${packages.join(' ')})`);
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/**
 * The processes a scenario started; all killed at its teardown and on exit. Each runs in a process group of its own,
 * and the whole group is killed: a server started through `runuser` is runuser's child, and killing runuser alone left
 * it running (a PgBouncer, parent pid 1, still listening after the run).
 */
const started = new Set<ChildProcess>();
const groups = new Set<number>();
process.on('exit', () => {
  for (const pid of groups) killGroup(pid);
});

function startServer(command: string, args: string[], asUser?: string): ChildProcess {
  const options = { stdio: 'ignore' as const, detached: true };
  const child = asUser ? spawn('runuser', ['-u', asUser, '--', command, ...args], options) : spawn(command, args, options);
  started.add(child);
  if (child.pid) groups.add(child.pid);
  child.once('exit', () => started.delete(child));
  return child;
}

async function killAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
      if (child.pid) killGroup(child.pid);
      await exited;
      // the group's other members (the server under runuser) go with the signal; wait until none is left
      if (child.pid) await waitGroupGone(child.pid);
    }),
  );
}

async function waitGroupGone(pid: number): Promise<void> {
  for (let i = 0; i < 100 && groupAlive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!groupAlive(pid)) groups.delete(pid);
}

/** The process groups of servers the topology scenarios started that are still alive (none, after their teardowns). */
export function serversLeftRunning(): number[] {
  return [...groups].filter(groupAlive);
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One inline Redis command (RESP) and its raw answer. */
function redisCommand(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.once('connect', () => socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    socket.on('data', (d) => {
      text += d.toString();
      if (text.endsWith('\r\n')) socket.end();
    });
    socket.once('close', () => resolve(text));
    socket.once('error', () => resolve(''));
  });
}

/** Keys on the Redis of REDIS_URL (the suite's own single server): 0 shows the service used only the topology. */
async function keysOff(world: WorldLike): Promise<number> {
  return dbsize(Number(new URL(world.env.REDIS_URL!).port));
}

async function dbsize(port: number): Promise<number> {
  return Number(/:(\d+)/.exec(await redisCommand(port, 'DBSIZE'))?.[1] ?? NaN);
}

function workerLogs(kit: { logsDir: string }, world: WorldLike, pattern: string): string[] {
  const lines: string[] = [];
  for (const w of world.workers) {
    const file = path.join(kit.logsDir, `${world.name}-worker-${w.child.pid}.log`);
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line.includes(pattern)) lines.push(line.slice(0, 300));
  }
  return lines;
}

const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms / 100) / 10);

/**
 * Postgres through a PgBouncer 1.18 of the scenario's own (pool_mode = transaction), migrations over
 * DIRECT_DATABASE_URL: world.env pointed at it before the world's processes start; the server goes in `servers`.
 * `loginRetrySeconds`: PgBouncer's server_login_retry (1 s unless given; null leaves PgBouncer's default, 15 s).
 */
export async function startPgBouncer(
  kit: Pick<Kit<WorldLike, unknown, unknown>, 'tmp' | 'asRoot' | 'pgPort' | 'freePort' | 'until' | 'log'>,
  world: WorldLike,
  servers: ChildProcess[],
  options: { loginRetrySeconds?: number | null } = {},
): Promise<void> {
  const loginRetry = options.loginRetrySeconds === undefined ? 1 : options.loginRetrySeconds;
  ensurePackages({ pgbouncer: 'pgbouncer' });
  const dir = path.join(kit.tmp, 'pgbouncer');
  fs.mkdirSync(dir, { recursive: true });
  const port = await kit.freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${kit.pgPort()}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir =`,
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 1000',
      'default_pool_size = 20',
      // a server login that failed is tried again after 1 s, not 15: Postgres back is Postgres served (docs/deploy.md)
      ...(loginRetry === null ? [] : [`server_login_retry = ${loginRetry}`]),
      '',
    ].join('\n'),
  );
  if (kit.asRoot) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  servers.push(startServer('pgbouncer', [ini], kit.asRoot ? 'postgres' : undefined));
  const direct = world.env.DATABASE_URL!;
  const pooled = direct.replace(/:\d+\//, `:${port}/`);
  await kit.until(() => listening(port), 10_000, 'pgbouncer');
  Object.assign(world.env, { DATABASE_URL: pooled, DIRECT_DATABASE_URL: direct, DATABASE_TRANSACTION_POOLING: 'true' });
  kit.log(`pgbouncer :${port} (transaction mode, server_login_retry ${loginRetry ?? 'default'}) in front of postgres :${kit.pgPort()}`);
}

/** Processes started by `startServer`, killed with their groups (a topology's servers, at its teardown). */
export const stopServers = killAll;

export function topologyScenarios<W extends WorldLike, A, D>(kit: Kit<W, A, D>): Record<string, TopologyScenario<W>> {
  const servers: ChildProcess[] = [];
  let hooks: Awaited<ReturnType<typeof webhookReceiver>> | undefined;
  let primaryProcess: ChildProcess | undefined;
  let sentinelPorts: number[] = [];
  let clusterPorts: number[] = [];
  let replicaPort = 0;
  const teardown = async () => {
    await killAll(servers.splice(0));
  };

  return {
    /**
     * Postgres through PgBouncer (pool_mode = transaction, 1.18: no named prepared statements kept), migrations over
     * DIRECT_DATABASE_URL; two workers drain the sends; the advisory lock housekeeping takes is checked through the pooler.
     */
    pgbouncer: {
      apis: 1,
      workers: 2,
      teardown,
      setup: (world) => startPgBouncer(kit, world, servers),
      async run(world) {
        const startedAt = Date.now();
        const answers = await kit.load(world, kit.sends);
        const ids = kit.accepted(answers);
        const ms = await kit.drained(world.sink, ids, 180_000);
        await kit.sleep(3_000);
        const d = await kit.delivery(world.sink, ids);
        // the lock housekeeping takes (a transaction's advisory lock): exclusive through the pooler
        const [a, b] = [new Client({ connectionString: world.env.DATABASE_URL }), new Client({ connectionString: world.env.DATABASE_URL })];
        await a.connect();
        await b.connect();
        let lockExclusive = false;
        try {
          await a.query('BEGIN');
          await b.query('BEGIN');
          const first = (await a.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          const second = (await b.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          await a.query('COMMIT');
          const afterCommit = (await b.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          await b.query('COMMIT');
          lockExclusive = first && !second && afterCommit;
        } finally {
          await a.end();
          await b.end();
        }
        const preparedErrors = workerLogs(kit, world, 'prepared statement');
        const housekeepingFailures = workerLogs(kit, world, 'housekeeping task failed');
        return {
          ...pick(d),
          drainSeconds: seconds(ms === null ? null : Date.now() - startedAt - 3_000),
          duringFault: { answers: kit.summarizeAnswers(answers), lockExclusiveThroughPooler: lockExclusive, preparedStatementErrors: preparedErrors.length, housekeepingFailures: housekeepingFailures.length },
          target: 'exactly once by 2 workers through PgBouncer (transaction mode); the housekeeping lock exclusive; no housekeeping failure',
          met: d.duplicates === 0 && d.lost === 0 && d.accepted === kit.sends && lockExclusive && preparedErrors.length === 0 && housekeepingFailures.length === 0,
        };
      },
    },

    /**
     * Redis as a Cluster of 3 primaries (queues under one hash tag): sends, a broadcast to a list, and a webhook for
     * every message.sent, each delivered exactly once.
     */
    'redis-cluster': {
      apis: 1,
      workers: 2,
      teardown: async () => {
        await teardown();
        await hooks?.close();
      },
      async setup(world) {
        ensurePackages({ 'redis-server': 'redis-server', 'redis-cli': 'redis-tools' });
        const dir = path.join(kit.tmp, 'cluster');
        fs.mkdirSync(dir, { recursive: true });
        const ports: number[] = [];
        for (let i = 0; i < 3; i++) {
          const port = await kit.freePort();
          const bus = await kit.freePort();
          ports.push(port);
          servers.push(
            startServer('redis-server', [
              '--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
              '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no', '--dir', dir,
            ]),
          );
        }
        for (const port of ports) await kit.until(async () => (await redisCommand(port, 'PING')).startsWith('+PONG'), 10_000, `redis ${port}`);
        execFileSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
        for (const port of ports) await kit.until(async () => (await redisCommand(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), 30_000, `cluster state on ${port}`);
        clusterPorts = ports;
        world.env.REDIS_CLUSTER_NODES = ports.map((p) => `127.0.0.1:${p}`).join(',');
        hooks = await webhookReceiver();
        kit.log(`redis cluster of 3 primaries on ${ports.join(', ')}`);
      },
      async run(world) {
        const outcome = await webhookWorkload(kit, world, hooks!, 1);
        const keysPerNode = await Promise.all(clusterPorts.map(dbsize));
        const keysOnRedisUrl = await keysOff(world);
        return {
          ...outcome,
          duringFault: { ...outcome.duringFault, keysPerNode, keysOnRedisUrl },
          target: 'sends, a broadcast and webhooks each exactly once on a 3-primary Redis Cluster',
          met: outcome.met && keysPerNode.some((n) => n > 0) && keysOnRedisUrl === 0,
        };
      },
    },

    /**
     * Redis under Sentinel (a primary, a replica, 3 sentinels): the primary SIGKILLed mid-drain; the sentinels promote
     * the replica and the service follows without a restart. What the replica had not received yet comes back from
     * Postgres (the reconciler).
     */
    'sentinel-failover': {
      apis: 1,
      workers: 1,
      drainFirst: true,
      teardown,
      async setup(world) {
        ensurePackages({ 'redis-server': 'redis-server', 'redis-sentinel': 'redis-sentinel' });
        const dir = path.join(kit.tmp, 'sentinel');
        fs.mkdirSync(dir, { recursive: true });
        const primary = await kit.freePort();
        const replica = await kit.freePort();
        const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
        primaryProcess = startServer('redis-server', ['--port', String(primary), ...common]);
        servers.push(primaryProcess);
        servers.push(startServer('redis-server', ['--port', String(replica), '--replicaof', '127.0.0.1', String(primary), ...common]));
        for (const port of [primary, replica]) await kit.until(async () => (await redisCommand(port, 'PING')).startsWith('+PONG'), 10_000, `redis ${port}`);
        await kit.until(async () => (await redisCommand(replica, 'INFO', 'replication')).includes('master_link_status:up'), 30_000, 'the replica in sync');
        sentinelPorts = [];
        for (let i = 0; i < 3; i++) {
          const port = await kit.freePort();
          const conf = path.join(dir, `sentinel-${port}.conf`);
          fs.writeFileSync(
            conf,
            [
              `port ${port}`,
              'bind 127.0.0.1',
              `dir ${dir}`,
              `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary} 2`,
              `sentinel down-after-milliseconds ${SENTINEL_NAME} 2000`,
              `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
              `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
              '',
            ].join('\n'),
          );
          servers.push(startServer('redis-sentinel', [conf]));
          sentinelPorts.push(port);
        }
        for (const port of sentinelPorts) {
          await kit.until(async () => (await redisCommand(port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)).includes(String(primary)), 10_000, `sentinel ${port}`);
        }
        Object.assign(world.env, { REDIS_SENTINELS: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','), REDIS_SENTINEL_NAME: SENTINEL_NAME });
        replicaPort = replica;
        kit.log(`redis primary :${primary}, replica :${replica}, sentinels ${sentinelPorts.join(', ')}`);
      },
      async run(world) {
        const answers = await kit.load(world, kit.sends);
        const ids = kit.accepted(answers);
        for (let i = 0; i < world.workerCount; i++) world.startWorker();
        await kit.until(async () => (await kit.deliveredCount(world.sink)) >= Math.min(500, ids.length / 4), 60_000, 'the first deliveries', 20);
        const atKill = await kit.deliveredCount(world.sink);
        await killAll([primaryProcess!]);
        const killedAt = Date.now();
        kit.log('redis primary SIGKILLed at', atKill, 'delivered');
        await kit.until(
          async () => (await redisCommand(sentinelPorts[0]!, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)).includes(String(replicaPort)),
          60_000,
          'the promotion',
          100,
        );
        const promotedAt = Date.now();
        kit.log('replica promoted after', promotedAt - killedAt, 'ms');
        const ms = await kit.drained(world.sink, ids, 120_000);
        await kit.sleep(3_000);
        const d = await kit.delivery(world.sink, ids);
        const keysOnPromoted = await dbsize(replicaPort);
        const keysOnRedisUrl = await keysOff(world);
        const restarted = [...world.apis.map((a) => a.service), ...world.workers].filter((s) => s.child.exitCode !== null || s.child.signalCode !== null).length;
        return {
          ...pick(d),
          drainSeconds: seconds(ms),
          duringFault: {
            deliveredAtKill: atKill,
            promotionSeconds: seconds(promotedAt - killedAt),
            drainedAfterPromotionSeconds: seconds(ms),
            processesExited: restarted,
            keysOnPromoted,
            keysOnRedisUrl,
            answers: kit.summarizeAnswers(answers),
          },
          target: '0 lost, drained within 60 s of the promotion, no service restart',
          met: d.lost === 0 && ms !== null && ms <= 60_000 && restarted === 0 && keysOnPromoted > 0 && keysOnRedisUrl === 0,
        };
      },
    },
  };
}

const SENTINEL_NAME = 'msprimary';

export function pick(d: { accepted: number; delivered: number; duplicates: number; lost: number }) {
  return { accepted: d.accepted, delivered: d.delivered, duplicates: d.duplicates, lost: d.lost };
}
