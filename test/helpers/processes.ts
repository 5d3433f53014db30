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

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
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
