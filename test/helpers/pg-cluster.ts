import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Real Postgres 15 servers of a test's own (a primary, streaming standbys made with pg_basebackup), in a temp folder,
 * on ports of its choosing, run as the `postgres` user when the tests run as root (initdb refuses root).
 */
const BIN = '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;

function run(command: string, args: string[]): string {
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, command), ...args]] : [path.join(BIN, command), args];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
}

export class PgServer {
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}`;
  }

  start(): void {
    run('pg_ctl', ['-D', this.dir, '-l', `${this.dir}.log`, '-w', '-t', '60', 'start']);
  }

  /** Stops it at once, as a crash would (no shutdown checkpoint). */
  kill(): void {
    run('pg_ctl', ['-D', this.dir, '-m', 'immediate', '-w', 'stop']);
  }

  stop(): void {
    try {
      run('pg_ctl', ['-D', this.dir, '-m', 'fast', '-w', 'stop']);
    } catch {
      // not running
    }
  }

  promote(): void {
    run('pg_ctl', ['-D', this.dir, '-w', 'promote']);
  }
}

export class PgCluster {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-pg-cluster-'));
  readonly servers: PgServer[] = [];

  constructor() {
    if (asRoot) execFileSync('chown', ['postgres:postgres', this.root]);
  }

  /** A new primary: initdb (trust on loopback, replication allowed), quick settings for tests, started. */
  primary(port: number): PgServer {
    const dir = path.join(this.root, `pg${port}`);
    run('initdb', ['-D', dir, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    fs.appendFileSync(
      path.join(dir, 'postgresql.conf'),
      `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${this.root}'\nfsync = off\nfull_page_writes = off\nshared_buffers = 16MB\nwal_keep_size = 64MB\n`,
    );
    const server = new PgServer(dir, port);
    server.start();
    this.servers.push(server);
    return server;
  }

  /** A streaming standby of `primary` (pg_basebackup -R), started. */
  standby(primary: PgServer, port: number): PgServer {
    const dir = path.join(this.root, `pg${port}`);
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', dir, '-R', '-X', 'stream', '--no-sync', '--checkpoint=fast']);
    fs.appendFileSync(path.join(dir, 'postgresql.auto.conf'), `port = ${port}\n`);
    const server = new PgServer(dir, port);
    server.start();
    this.servers.push(server);
    return server;
  }

  destroy(): void {
    for (const server of this.servers) server.stop();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}
