import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { waitFor } from './wait';

export const ROOT = path.resolve(__dirname, '../..');


export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Runs a TypeScript entry of the project as a real process (as `npm start` does), capturing its output. */
export function runTs(entry: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Proc {
  // tsx as a loader in the one process (not its CLI, which runs the file in a child and relays signals to it): a signal
  // reaches the program itself, as it does in production
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** `npm run admin -- ...args` as a real process: the exit code, the JSON it printed (on success) and its stderr. */
export async function runAdmin(...args: string[]) {
  const proc = runTs('scripts/admin.ts', args);
  const code = await proc.exited;
  return { code, out: code === 0 ? JSON.parse(proc.stdout()) : undefined, err: proc.stderr() };
}

/** Stops a child process (SIGTERM) and waits for its exit; nothing when it has exited already. */
export async function terminate(proc: ChildProcess | null): Promise<void> {
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  await exited;
}

// Ports for servers a test starts as a child process (which binds the port itself, later) come from below Linux's
// ephemeral range (ip_local_port_range, 32768-60999). A port from listen(0) lies inside it: between the pick and the
// child's listen, the kernel may hand it to another test's listen(0) or to any outgoing connection, and the child fails
// to start. Each jest worker draws from its own block, walking it in turn, so two workers never pick the same port and
// one worker does not pick a port again until it has used its whole block. 21000-21999 stays for the fixed ports of
// tests that need one.
const PICKED = { first: 22_000, block: 1_000, blocks: 10 };
let nextPick = -1;

/** A loopback port nothing listens on, below the ephemeral range and in this jest worker's own block. */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID ?? 1) - 1;
  const start = PICKED.first + (worker % PICKED.blocks) * PICKED.block;
  if (nextPick < 0) nextPick = Math.floor(Math.random() * PICKED.block);
  for (let tried = 0; tried < PICKED.block; tried++) {
    const port = start + (nextPick++ % PICKED.block);
    if ((await canListen(port, '127.0.0.1')) && (await canListen(port, '::'))) return port;
  }
  throw new Error(`no free port in ${start}-${start + PICKED.block - 1}`);
}

function canListen(port: number, host: string): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    // taken (or reserved); a host this machine lacks (no IPv6) says nothing about the port
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'EADDRINUSE' && err.code !== 'EACCES'));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** Waits until the process answers GET url with 200 (or dies). */
export async function waitForHttp(proc: Proc, url: string, timeout = 30_000): Promise<void> {
  await waitFor(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`process exited: ${proc.stderr()}`);
      const res = await fetch(url).catch(() => undefined);
      return res?.status === 200;
    },
    { timeout, interval: 100, what: url },
  );
}

/** SIGKILL to a process group (a server started detached, with what it started under it). */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Whether any process of a group is still alive. */
export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
