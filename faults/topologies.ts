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

/** What a scenario here needs of run.ts's world and helpers. */
export interface WorldLike {
  name: string;
  env: Record<string, string>;
  workers: { child: ChildProcess }[];
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

/** The processes a scenario started; all killed at its teardown and on exit. */
const started = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

function startServer(command: string, args: string[], asUser?: string): ChildProcess {
  const child = asUser ? spawn('runuser', ['-u', asUser, '--', command, ...args], { stdio: 'ignore' }) : spawn(command, args, { stdio: 'ignore' });
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}

async function killAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
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

export function topologyScenarios<W extends WorldLike, A, D>(kit: Kit<W, A, D>): Record<string, TopologyScenario<W>> {
  const servers: ChildProcess[] = [];
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
      async setup(world) {
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
            '',
          ].join('\n'),
        );
        if (kit.asRoot) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
        servers.push(startServer('pgbouncer', [ini], kit.asRoot ? 'postgres' : undefined));
        const direct = world.env.DATABASE_URL!;
        const pooled = direct.replace(/:\d+\//, `:${port}/`);
        await kit.until(() => listening(port), 10_000, 'pgbouncer');
        Object.assign(world.env, { DATABASE_URL: pooled, DIRECT_DATABASE_URL: direct, DATABASE_TRANSACTION_POOLING: 'true' });
        kit.log(`pgbouncer :${port} (transaction mode) in front of postgres :${kit.pgPort()}`);
      },
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
  };
}

function pick(d: { accepted: number; delivered: number; duplicates: number; lost: number }) {
  return { accepted: d.accepted, delivered: d.delivered, duplicates: d.duplicates, lost: d.lost };
}
