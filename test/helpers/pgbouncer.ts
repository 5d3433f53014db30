import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { freePort } from './processes';
import { waitFor } from './wait';

/**
 * A PgBouncer of the test's own (Debian's package) in transaction mode in front of a Postgres port (a PgProxy's, so the
 * test can take the database away behind it without touching the shared server). It refuses to run as root, so as
 * root it runs as the `postgres` user.
 */
export class PgBouncer {
  private child?: ChildProcess;
  private dir = '';
  port = 0;

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<void> {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbouncer-'));
    fs.chmodSync(this.dir, 0o755);
    this.port = await freePort();
    const ini = path.join(this.dir, 'pgbouncer.ini');
    fs.writeFileSync(path.join(this.dir, 'users.txt'), '"postgres" ""\n');
    fs.writeFileSync(
      ini,
      [
        '[databases]',
        `* = host=127.0.0.1 port=${this.upstreamPort}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${this.port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${path.join(this.dir, 'users.txt')}`,
        'pool_mode = transaction',
        'default_pool_size = 5',
        // a login that failed is tried again after 1 s (15 s by default), a client waits for a server 3 s at most
        'server_login_retry = 1',
        'query_wait_timeout = 3',
        '',
      ].join('\n'),
    );
    const asRoot = process.getuid?.() === 0;
    this.child = asRoot ? spawn('runuser', ['-u', 'postgres', '--', 'pgbouncer', ini], { stdio: 'ignore', detached: true }) : spawn('pgbouncer', [ini], { stdio: 'ignore', detached: true });
    await waitFor(
      async () => {
        const client = new Client({ connectionString: this.url() });
        await client.connect();
        await client.end();
        return true;
      },
      { what: 'pgbouncer serving' },
    );
  }

  /** DATABASE_URL through PgBouncer. */
  url(): string {
    const url = new URL(process.env.DATABASE_URL!);
    url.host = `127.0.0.1:${this.port}`;
    return url.toString();
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child?.pid && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // the whole group: under runuser, pgbouncer is runuser's child
      process.kill(-child.pid, 'SIGKILL');
      await exited;
    }
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
