/**
 * The processes a bench run starts (the services compiled, its own helpers through tsx) and what it reads of them from
 * /proc: peak RSS, CPU by process and by name (Postgres backends, Redis).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { API_NODE_FLAGS, SMTP_NODE_FLAGS, WORKER_NODE_FLAGS } from '../scripts/node-options';

const ROOT = path.resolve(__dirname, '..');

/** the V8 flags each service ships with (scripts/node-options.ts), as `npm start` gives them */
const SERVICE_FLAGS: Record<string, readonly string[]> = {
  'apps/api/src/server.ts': API_NODE_FLAGS,
  'apps/smtp/src/main.ts': SMTP_NODE_FLAGS,
  'apps/mx/src/main.ts': API_NODE_FLAGS,
  'apps/worker/src/main.ts': WORKER_NODE_FLAGS,
};

/** every process the run started, killed at its end whatever happened */
export const children: ChildProcess[] = [];

export function start(entry: string, env: Record<string, string>): ChildProcess {
  // the services run compiled, as `npm start` runs them (npm run bench builds first); the bench's own helpers through
  // tsx. One process per service, so /proc/<pid> is the service itself.
  const compiled = entry.startsWith('apps/');
  // BENCH_CPU_PROF=<dir>: each service writes a V8 CPU profile there when it stops (figures are then not comparable)
  const profile = compiled && process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const flags = SERVICE_FLAGS[entry] ?? [];
  const args = compiled ? [...profile, ...flags, path.join(ROOT, 'dist', entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', path.join(ROOT, entry)];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    // the bench's mailboxes send from example.com, a domain no account verified (REQUIRE_VERIFIED_DOMAIN is for real installs)
    env: { ...process.env, LOG_LEVEL: 'warn', NODE_ENV: 'production', REQUIRE_VERIFIED_DOMAIN: 'false', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Peak resident set size of a live process, in MB (VmHWM). */
export function peakRssMb(child: ChildProcess): number {
  const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/**
 * Each matching process's CPU when last seen, by pid and start time: a Postgres backend that exits (a pool closing an
 * idle connection) keeps what it had used, so the sums below never go back.
 */
const lastSeen = new Map<string, { name: string; ms: number }>();

/** CPU time used so far by every process of these names (Postgres backends, Redis), in ms. */
export function cpuMsByName(names: string[]): Record<string, number> {
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const name = names.find((n) => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith(n));
    if (!name) continue;
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    lastSeen.set(`${pid}:${fields[19]}`, { name, ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 });
  }
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const { name, ms } of lastSeen.values()) if (name in out) out[name]! += ms;
  return out;
}

/** CPU time (user + system) a live process has used so far, in ms. */
export function cpuMs(child: ChildProcess): number {
  const fields = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime and stime, in clock ticks (USER_HZ = 100)
}

/**
 * A live process's main thread so far (/proc/<pid>/task/<pid>/schedstat): the time it ran and the time it was ready to
 * run but waited for a core, in ms. On a shared host the second says whether a server waits on its work or on the CPU.
 */
export function mainThreadMs(child: ChildProcess): { ran: number; waited: number } {
  const [ran, waited] = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, 'utf8').split(' ').map(Number);
  return { ran: ran! / 1e6, waited: waited! / 1e6 };
}

/** CPU used so far by the server under load, Postgres, Redis and this process (the load generator runs in it), in ms. */
export function acceptCpu(server: ChildProcess): Record<string, number> {
  const own = process.cpuUsage();
  return { server: cpuMs(server), ...cpuMsByName(['postgres', 'redis-server']), 'load generator': (own.user + own.system) / 1000 };
}

/** Each counter's growth from `before` to `after`, divided by `requests`: the requests or emails it served, or the seconds it ran. */
export function perRequest(before: Record<string, number>, after: Record<string, number>, requests: number, digits = 3): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, +((v - before[k]!) / Math.max(1, requests)).toFixed(digits)]));
}
