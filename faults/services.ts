/** The service's processes a fault run starts (API, worker, SMTP, the sink), each with its output kept and logged. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
/** each process's output, for a look after a run (not committed) */
export const LOGS = path.join(__dirname, 'logs');
fs.mkdirSync(LOGS, { recursive: true });

/** every service log this run wrote (the stack-frame count at the end reads them) */
export const logFiles: string[] = [];

export const children = new Set<ChildProcess>();

export interface Service {
  child: ChildProcess;
  output: () => string;
}

export function startNode(entry: string, env: Record<string, string>, logName?: string): Service {
  const compiled = entry.startsWith('apps/');
  const args = compiled ? [path.join(ROOT, 'dist', entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', path.join(ROOT, entry)];
  // the scenarios send from domains no account verified (REQUIRE_VERIFIED_DOMAIN is for real installs)
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', NODE_ENV: 'production', REQUIRE_VERIFIED_DOMAIN: 'false', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  const logFile = path.join(LOGS, `${logName ?? path.basename(entry, '.ts')}-${child.pid}.log`);
  logFiles.push(logFile);
  const file = fs.createWriteStream(logFile);
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.stdout!.pipe(file);
  child.stderr!.pipe(file);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { child, output: () => out };
}

export async function stopService(service: Service, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill(signal);
  const timer = setTimeout(() => service.child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
