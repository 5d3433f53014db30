/**
 * The servers of the production topologies' scenarios (faults/topologies.ts, faults/outages.ts): Debian's packages
 * installed when missing, each server in a process group of its own (killed whole at a teardown and on exit), PgBouncer
 * in transaction mode in front of the suite's Postgres, and a raw Redis command to look at a server.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { groupAlive, killGroup } from '../test/helpers/processes';
import type { Kit, WorldLike } from './kit';

/** Debian packages the scenarios need, installed when missing (as root; otherwise the scenario fails saying so). */
export function ensurePackages(binaries: Record<string, string>): void {
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

export function startServer(command: string, args: string[], asUser?: string): ChildProcess {
  const options = { stdio: 'ignore' as const, detached: true };
  const child = asUser ? spawn('runuser', ['-u', asUser, '--', command, ...args], options) : spawn(command, args, options);
  started.add(child);
  if (child.pid) groups.add(child.pid);
  child.once('exit', () => started.delete(child));
  return child;
}

export async function killAll(children: ChildProcess[]): Promise<void> {
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

export function listening(port: number): Promise<boolean> {
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
export function redisCommand(port: number, ...args: string[]): Promise<string> {
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
export async function keysOff(world: WorldLike): Promise<number> {
  return dbsize(Number(new URL(world.env.REDIS_URL!).port));
}

export async function dbsize(port: number): Promise<number> {
  return Number(/:(\d+)/.exec(await redisCommand(port, 'DBSIZE'))?.[1] ?? NaN);
}

export function workerLogs(kit: { logsDir: string }, world: WorldLike, pattern: string): string[] {
  const lines: string[] = [];
  for (const w of world.workers) {
    const file = path.join(kit.logsDir, `${world.name}-worker-${w.child.pid}.log`);
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line.includes(pattern)) lines.push(line.slice(0, 300));
  }
  return lines;
}


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
