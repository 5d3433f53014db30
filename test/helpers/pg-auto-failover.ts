import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { groupAlive, killGroup } from './processes';

/**
 * A pg_auto_failover formation of a test's own (Debian's postgresql-15-auto-failover, `pg_autoctl`): a monitor, a
 * primary and a secondary, each a `pg_autoctl ... --run` in a process group of its own, run as the `postgres` user when
 * the tests run as root, in a temp folder, on the ports given. Used by test/failover and the fault suite's
 * `pg-failover` (faults/pg-failover.ts).
 *
 * The monitor's health checks are made quicker (a node unhealthy after 10 s instead of 20 s, the old primary given 5 s
 * instead of 30 s to demote itself) so a failover takes seconds; docs/deploy.md gives the defaults for production.
 * Not quicker still: on a loaded host a keeper that does not report for a few seconds would be failed over.
 */
const PG_CTL = '/usr/lib/postgresql/15/bin/pg_ctl';
const asRoot = process.getuid?.() === 0;
const running = new Set<number>();
process.on('exit', () => {
  for (const pid of running) killGroup(pid);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

/** One statement on a server of the formation, on a connection of its own. */
async function query<T>(port: number, database: string, text: string): Promise<T[]> {
  const client = new Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/${database}`, connectionTimeoutMillis: 3_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The monitor's settings that make a failover take seconds (pg_auto_failover's own defaults in the comments). */
const QUICK_MONITOR = {
  'pgautofailover.health_check_period': 2000, // 5000
  'pgautofailover.health_check_timeout': 3000, // 5000
  'pgautofailover.health_check_max_retries': 2, // 2
  'pgautofailover.health_check_retry_delay': 1000, // 2000
  'pgautofailover.node_considered_unhealthy_timeout': 10000, // 20000
  'pgautofailover.primary_demote_timeout': 5000, // 30000
};

export interface NodeState {
  name: string;
  port: number;
  reported: string;
  assigned: string;
}

export class AutoFailover {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-pgaf-'));
  private readonly groups = new Map<string, ChildProcess>();

  /** `ports`: the monitor's, then the two nodes' (node1 starts as the primary). */
  constructor(
    readonly ports: { monitor: number; nodes: [number, number] },
    readonly database = 'mail',
  ) {
    fs.chmodSync(this.root, 0o755);
    for (const dir of ['config', 'data']) fs.mkdirSync(path.join(this.root, dir));
    // the servers run as postgres and write their data and config under the root
    if (asRoot) execFileSync('chown', ['-R', 'postgres:postgres', this.root]);
  }

  /** The service's DATABASE_URL: both nodes, the service finds the one that accepts writes. */
  get url(): string {
    return `postgresql://postgres@${this.ports.nodes.map((p) => `127.0.0.1:${p}`).join(',')}/${this.database}`;
  }

  nodeUrl(node: 1 | 2, database = this.database): string {
    return `postgresql://postgres@127.0.0.1:${this.ports.nodes[node - 1]}/${database}`;
  }

  private start(name: string, args: string[]): void {
    const command = `exec pg_autoctl ${args.join(' ')} --pgctl ${PG_CTL} --auth trust --no-ssl --run >> ${path.join(this.root, `${name}.log`)} 2>&1`;
    const env = [`XDG_CONFIG_HOME=${path.join(this.root, 'config')}`, `XDG_DATA_HOME=${path.join(this.root, 'data')}`, `PATH=${process.env.PATH}`];
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', 'env', ...env, 'sh', '-c', command]] : ['env', [...env, 'sh', '-c', command]];
    const child = spawn(file, argv, { stdio: 'ignore', detached: true, cwd: this.root });
    this.groups.set(name, child);
    if (child.pid) running.add(child.pid);
  }

  /** The monitor, then node1 (the primary), then node2 cloned from it (the secondary); answers once both are in sync. */
  async create(): Promise<void> {
    const { monitor, nodes } = this.ports;
    this.start('monitor', ['create', 'monitor', '--pgdata', path.join(this.root, 'monitor'), '--pgport', String(monitor), '--hostname', '127.0.0.1']);
    await until(async () => (await query(monitor, 'pg_auto_failover', 'SELECT 1 FROM pgautofailover.node LIMIT 1')) !== undefined, 60_000, 'the monitor');
    for (const [name, value] of Object.entries(QUICK_MONITOR)) await query(monitor, 'pg_auto_failover', `ALTER SYSTEM SET ${name} = ${value}`);
    await query(monitor, 'pg_auto_failover', 'SELECT pg_reload_conf()');
    const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitor}/pg_auto_failover?sslmode=disable`;
    const node = (n: 1 | 2) =>
      this.start(`node${n}`, [
        'create', 'postgres', '--pgdata', path.join(this.root, `node${n}`), '--pgport', String(nodes[n - 1]), '--listen', '127.0.0.1',
        '--hostname', '127.0.0.1', '--name', `node${n}`, '--dbname', this.database, '--monitor', `'${monitorUrl}'`,
      ]);
    node(1);
    await until(async () => (await this.states()).some((s) => s.name === 'node1' && s.reported === 'single'), 90_000, 'node1 as the primary');
    node(2);
    // pg_autoctl's pg_basebackup waits for the primary's next checkpoint (minutes away on an idle server): ask for it
    await until(async () => {
      await query(nodes[0], 'postgres', 'CHECKPOINT').catch(() => undefined);
      const states = await this.states();
      return states.some((s) => s.name === 'node1' && s.reported === 'primary') && states.some((s) => s.name === 'node2' && s.reported === 'secondary');
    }, 120_000, 'node2 as the secondary');
  }

  /** Each node as the monitor sees it. */
  async states(): Promise<NodeState[]> {
    return query<NodeState>(this.ports.monitor, 'pg_auto_failover', 'SELECT nodename AS name, nodeport AS port, reportedstate::text AS reported, goalstate::text AS assigned FROM pgautofailover.node ORDER BY nodeid');
  }

  /** Whether a node takes writes now (a primary, not read-only: pg_auto_failover's promotion is done). */
  async acceptsWrites(node: 1 | 2): Promise<boolean> {
    const [row] = await query<{ writable: boolean }>(this.ports.nodes[node - 1]!, 'postgres', "SELECT NOT (pg_is_in_recovery() OR current_setting('transaction_read_only')::bool) AS writable");
    return row?.writable === true;
  }

  /** SIGKILL to a node's whole process group (pg_autoctl, its keeper and its Postgres), as the loss of its host. */
  async kill(node: 1 | 2): Promise<void> {
    const child = this.groups.get(`node${node}`);
    if (!child?.pid) return;
    killGroup(child.pid);
    await until(async () => !groupAlive(child.pid!), 10_000, `node${node}'s processes gone`);
    running.delete(child.pid);
  }

  /** The process groups still alive (none after destroy). */
  leftRunning(): number[] {
    return [...this.groups.values()].map((c) => c.pid!).filter((pid) => pid && groupAlive(pid));
  }

  /** Copies the servers' pg_autoctl logs (with their Postgres's) into `dir`, named `<prefix>-<server>.log`. */
  keepLogs(dir: string, prefix: string): void {
    for (const name of ['monitor', 'node1', 'node2']) {
      const file = path.join(this.root, `${name}.log`);
      if (fs.existsSync(file)) fs.copyFileSync(file, path.join(dir, `${prefix}-${name}.log`));
      // the server's own log (pg_autoctl runs Postgres with its logging collector, into PGDATA/log)
      const logs = path.join(this.root, name, 'log');
      const text = fs.existsSync(logs) ? fs.readdirSync(logs).sort().map((f) => fs.readFileSync(path.join(logs, f), 'utf8')).join('') : '';
      if (text) fs.writeFileSync(path.join(dir, `${prefix}-${name}-postgres.log`), text);
    }
  }

  async destroy(): Promise<void> {
    for (const child of this.groups.values()) if (child.pid) killGroup(child.pid);
    for (const child of this.groups.values()) {
      if (!child.pid) continue;
      await until(async () => !groupAlive(child.pid!), 10_000, 'the formation gone').catch(() => undefined);
      running.delete(child.pid);
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }

  /** The last lines of a server's pg_autoctl log ('monitor', 'node1', 'node2'), for a failure's message. */
  log(name: string, lines = 20): string {
    const file = path.join(this.root, `${name}.log`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '';
  }
}
