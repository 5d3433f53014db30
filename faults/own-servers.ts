/**
 * The fault suite's own Postgres and Redis (faults/run.ts): Debian's redis-server and PostgreSQL 15 binaries, on free
 * loopback ports, in a temporary directory, Postgres as the `postgres` user when run as root.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from './kit';

const PG_BIN = '/usr/lib/postgresql/15/bin';

export const asRoot = process.getuid?.() === 0;
export const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'msfaults-'));
fs.chmodSync(tmp, 0o755);

export class OwnPostgres {
  readonly dir = path.join(tmp, 'pg');
  constructor(readonly port: number) {}

  private run(bin: string, args: string[]): void {
    const command = path.join(PG_BIN, bin);
    if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'ignore', cwd: tmp });
    else execFileSync(command, args, { stdio: 'ignore', cwd: tmp });
  }

  init(): void {
    fs.mkdirSync(this.dir);
    if (asRoot) execFileSync('chown', ['postgres:postgres', this.dir]);
    this.run('initdb', ['-D', this.dir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  }

  start(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`;
    this.run('pg_ctl', ['-D', this.dir, '-o', options, '-l', path.join(this.dir, 'log'), '-w', 'start']);
  }

  running(): boolean {
    try {
      this.run('pg_ctl', ['-D', this.dir, 'status']);
      return true;
    } catch {
      return false;
    }
  }

  /** Fast shutdown: connections are cut, as in a crash of the server's host from the clients' side. */
  stop(): void {
    this.run('pg_ctl', ['-D', this.dir, '-m', 'fast', '-w', 'stop']);
  }

  /** Immediate shutdown, for leaving in a hurry (Ctrl-C). */
  stopNow(): void {
    this.run('pg_ctl', ['-D', this.dir, '-m', 'immediate', '-w', 'stop']);
  }

  url(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }
}

export class OwnRedis {
  private child?: ChildProcess;
  constructor(readonly port: number) {}

  async start(): Promise<void> {
    // no persistence: a restart comes back empty, as after losing the instance
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmp], { stdio: 'ignore' });
    await until(() => this.ping(), 10_000, 'redis');
  }

  private ping(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1');
      socket.once('connect', () => socket.end('PING\r\n'));
      socket.once('data', (d) => resolve(d.toString().startsWith('+PONG')));
      socket.once('error', () => resolve(false));
    });
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  killNow(): void {
    if (this.child && this.child.exitCode === null) this.child.kill('SIGKILL');
  }

  /** SIGSTOP, SIGCONT: a Redis that hangs with its connections open, and resumes */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(signal);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
}
