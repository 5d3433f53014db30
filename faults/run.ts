/**
 * `npm run faults`: the fault suite (docs/reliability.md). Starts its OWN Redis and Postgres (Debian's redis-server
 * and PostgreSQL 15 binaries, on free loopback ports, in a temporary directory, Postgres as the `postgres` user when
 * run as root), the compiled API and worker (dist/, `npm run build` first) as separate processes, and an SMTP sink that
 * records every Message-ID (bench/smtp-sink.ts). Each scenario gets a fresh database, a fresh Redis and fresh processes,
 * injects its fault mid-drain, and reports accepted / delivered / duplicates / lost / time to drain / the answers seen
 * during the fault. Prints a table and writes faults/results.json. Not part of `npm test`.
 *
 * FAULTS_SENDS (default 2000) sets the sends of each scenario; FAULTS_ONLY=name1,name2 runs some scenarios only.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { serversLeftRunning, topologyScenarios } from './topologies';
import { webhookScenarios } from './webhooks';
import { smtpScenarios } from './smtp';
import { lifecycleScenarios } from './lifecycle';
import { inboundScenarios } from './inbound';
import { keptMarks, outageScenarios } from './outages';
import { oauthScenarios } from './oauth';
import { failoverScenarios, formationsLeftRunning } from './pg-failover';

const ROOT = path.resolve(__dirname, '..');
const SENDS = Number(process.env.FAULTS_SENDS ?? 2000);
const ONLY = process.env.FAULTS_ONLY?.split(',').filter(Boolean);
const PG_BIN = '/usr/lib/postgresql/15/bin';
// NODE_ENV=production takes an admin token of at least 32 characters; faults/topologies.ts uses the same
const ADMIN_TOKEN = 'faults-admin-token-0123456789-abcdefghijklmnop';
const SECRET_KEY = 'cd'.repeat(32);
const SEND_CONCURRENCY = 50;
/** each process's output, for a look after a run (not committed) */
const LOGS = path.join(__dirname, 'logs');
fs.mkdirSync(LOGS, { recursive: true });

/** every service log this run wrote (the stack-frame count at the end reads them) */
const logFiles: string[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (...parts: unknown[]) => console.log(`[faults ${new Date().toISOString().slice(11, 19)}]`, ...parts);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until<T>(check: () => Promise<T | false | null | undefined>, timeoutMs: number, what: string, interval = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(interval);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Our own Postgres and Redis

const asRoot = process.getuid?.() === 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'msfaults-'));
fs.chmodSync(tmp, 0o755);

class OwnPostgres {
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

class OwnRedis {
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

// ---------------------------------------------------------------------------------------------------------------
// The service's processes

const children = new Set<ChildProcess>();

interface Service {
  child: ChildProcess;
  output: () => string;
}

function startNode(entry: string, env: Record<string, string>, logName?: string): Service {
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

async function stopService(service: Service, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill(signal);
  const timer = setTimeout(() => service.child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------------------------
// One scenario's world: a database, a Redis, APIs, workers, a tenant, the sink

interface Sink {
  smtpPort: number;
  httpPort: number;
}

class World {
  apis: { service: Service; port: number }[] = [];
  workers: Service[] = [];
  /** how many workers the scenario runs */
  workerCount = 1;
  token = '';
  readonly env: Record<string, string>;

  constructor(
    readonly name: string,
    readonly pg: OwnPostgres,
    readonly redis: OwnRedis,
    /** a scenario may give its world a sink of its own (a slow one) in its setup */
    public sink: Sink,
  ) {
    this.env = {
      DATABASE_URL: pg.url(`faults_${name.replace(/\W/g, '_')}`),
      REDIS_URL: redis.url,
      REDIS_PREFIX: `faults:${name}`,
      ADMIN_TOKEN,
      SECRET_KEY,
      PUBLIC_URL: 'http://127.0.0.1',
      // the webhook scenario's receiver is on loopback, and its retries come within seconds (1 s x 4^n)
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_BASE_MS: '1000',
    };
  }

  async startApi(): Promise<void> {
    const port = await freePort();
    const service = startNode('apps/api/src/server.ts', { ...this.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` }, `${this.name}-api`);
    await until(async () => {
      if (service.child.exitCode !== null) throw new Error(`the API exited: ${service.output()}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    }, 60_000, 'the API');
    this.apis.push({ service, port });
  }

  startWorker(): Service {
    const worker = startNode('apps/worker/src/main.ts', this.env, `${this.name}-worker`);
    this.workers.push(worker);
    return worker;
  }

  account = 0;
  mailbox = 0;

  /** A call of the admin API on the first API: 201 (200 for PATCH) or it throws. */
  async admin<T>(p: string, body: unknown, method = 'POST'): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.apis[0]!.port}/admin/api${p}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== (method === 'POST' ? 201 : 200)) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  async tenant(): Promise<void> {
    const admin = <T>(p: string, body: unknown) => this.admin<T>(p, body);
    const { account } = await admin<{ account: { id: number } }>('/accounts', { name: 'faults' });
    const { mailbox } = await admin<{ mailbox: { id: number } }>('/mailboxes', {
      account: account.id,
      address: 'faults@example.com',
      smtp: `smtp://127.0.0.1:${this.sink.smtpPort}`,
      daily_limit: 100_000,
      gap_seconds: 0,
    });
    const { key } = await admin<{ key: { token: string } }>('/keys', { account: account.id, name: 'faults', mailbox: mailbox.id, daily_limit: 10_000_000 });
    this.token = key.token;
    this.account = account.id;
    this.mailbox = mailbox.id;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.workers, ...this.apis.map((a) => a.service)].map((s) => stopService(s)));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Load and measurement

interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
  ids: string[];
}

/**
 * One send; a request that got no answer at all (a kept-alive connection the server closed as it was reused) is
 * repeated under the same Idempotency-Key, so it is accepted once whatever happened to the first.
 */
async function send(port: number, token: string, i: number): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await sendOnce(port, token, i);
    if (answer.status !== 0 || attempt === 3) return answer;
  }
}

async function sendOnce(port: number, token: string, i: number): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': `fault-${i}` },
      body: JSON.stringify({ to: `reader${i}@example.org`, subject: `Fault ${i}`, text: 'Hello from the fault suite.' }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json().catch(() => ({}))) as { messages?: { id: string }[] };
    const ok = res.status === 202 || res.status === 200;
    return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.get('retry-after'), ids: ok ? (body.messages ?? []).map((m) => m.id) : [] };
  } catch {
    return { status: 0, ms: performance.now() - started, retryAfter: null, ids: [] };
  }
}

/** `count` sends at SEND_CONCURRENCY at once, spread over the world's APIs; numbering starts at `from`. */
async function load(world: World, count: number, from = 0, concurrency = SEND_CONCURRENCY): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        answers.push(await send(world.apis[i % world.apis.length]!.port, world.token, from + i));
      }
    }),
  );
  return answers;
}

function summarizeAnswers(answers: Answer[]) {
  const statuses: Record<string, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  const sorted = answers.map((a) => a.ms).sort((x, y) => x - y);
  const pct = (p: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10 : null);
  const retryAfter = [...new Set(answers.filter((a) => a.status === 503).map((a) => a.retryAfter))];
  return { requests: answers.length, statuses, p50Ms: pct(0.5), p99Ms: pct(0.99), maxMs: pct(1), retryAfter503: retryAfter };
}

async function sinkIds(sink: Sink): Promise<Map<string, number[]>> {
  const raw = (await (await fetch(`http://127.0.0.1:${sink.httpPort}/ids`)).json()) as Record<string, number[]>;
  // <uuid@domain>: the row id is the uuid
  return new Map(Object.entries(raw).map(([header, times]) => [header.slice(1).split('@')[0]!, times]));
}

async function sinkUnique(sink: Sink): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${sink.httpPort}/count`)).json()) as { unique: number }).unique;
}

interface Delivery {
  accepted: number;
  delivered: number;
  duplicates: number;
  lost: number;
  duplicateIds: string[];
  received: Map<string, number[]>;
}

async function delivery(sink: Sink, accepted: string[]): Promise<Delivery> {
  const received = await sinkIds(sink);
  const duplicateIds = [...received].filter(([, times]) => times.length > 1).map(([id]) => id);
  return {
    accepted: accepted.length,
    delivered: accepted.filter((id) => received.has(id)).length,
    duplicates: [...received.values()].reduce((n, times) => n + times.length - 1, 0),
    lost: accepted.filter((id) => !received.has(id)).length,
    duplicateIds,
    received,
  };
}

/** Waits until every accepted id reached the sink (or the timeout); answers the time it took, or null. */
async function drained(sink: Sink, accepted: string[], timeoutMs: number): Promise<number | null> {
  const started = Date.now();
  const want = new Set(accepted);
  try {
    await until(async () => {
      if ((await sinkUnique(sink)) < want.size) return false;
      const got = await sinkIds(sink);
      return [...want].every((id) => got.has(id));
    }, timeoutMs, 'the drain', 250);
    return Date.now() - started;
  } catch {
    return null;
  }
}

const accepted = (answers: Answer[]) => answers.flatMap((a) => a.ids);

async function statusCounts(world: World): Promise<Record<string, number>> {
  const client = new Client({ connectionString: world.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ status: string; n: number }>('SELECT status::text, count(*)::int AS n FROM messages GROUP BY status');
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await client.end();
  }
}

async function deliveredCount(sink: Sink): Promise<number> {
  return sinkUnique(sink);
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios

interface Result {
  scenario: string;
  accepted: number;
  delivered: number;
  duplicates: number;
  lost: number;
  drainSeconds: number | null;
  duringFault: unknown;
  target: string;
  met: boolean;
  notes?: unknown;
}

type Scenario = (world: World) => Promise<Omit<Result, 'scenario'>>;

const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms / 100) / 10);

/**
 * The scenario's sends, all accepted before the workers start (so the fault lands in the middle of a 2,000 drain, not
 * at its tail while the machine is busy accepting), then a wait until `minDelivered` of them reached the sink.
 */
async function acceptAndStartDrain(world: World, minDelivered: number, interval = 20): Promise<{ answers: Answer[]; ids: string[] }> {
  const answers = await load(world, SENDS);
  const ids = accepted(answers);
  for (let i = 0; i < world.workerCount; i++) world.startWorker();
  await until(async () => (await deliveredCount(world.sink)) >= Math.min(minDelivered, ids.length / 4), 60_000, 'the first deliveries', interval);
  return { answers, ids };
}

/** `drainFirst`: the scenario accepts its sends before starting the workers (acceptAndStartDrain). */
const scenarios: Record<string, { apis: number; workers: number; drainFirst?: boolean; setup?: (world: World) => Promise<void>; teardown?: () => Promise<void>; run: Scenario }> = {
  /** Redis killed mid-drain and restarted empty 5 s later; nothing restarted on our side. */
  'redis-lost': {
    drainFirst: true,
    apis: 1,
    workers: 1,
    async run(world) {
      const { answers, ids } = await acceptAndStartDrain(world, 500);
      await world.redis.kill();
      log('redis killed at', await deliveredCount(world.sink), 'delivered');
      await sleep(5_000);
      await world.redis.start();
      const back = Date.now();
      log('redis back (empty)');
      const ms = await drained(world.sink, ids, 120_000);
      const d = await delivery(world.sink, ids);
      const sinceBack = ms === null ? null : ms;
      return {
        ...pick(d),
        drainSeconds: seconds(sinceBack),
        duringFault: { answers: summarizeAnswers(answers), statusesAtEnd: await statusCounts(world), drainedAfterRedisBackSeconds: seconds(sinceBack), redisBackAt: new Date(back).toISOString() },
        target: 'all delivered within 60 s of Redis back, no restart',
        met: d.lost === 0 && sinceBack !== null && sinceBack <= 60_000,
      };
    },
  },

  /** Postgres stopped for 20 s mid-drain; sends made meanwhile must answer 503 with Retry-After. */
  'postgres-stopped': {
    drainFirst: true,
    apis: 1,
    workers: 1,
    async run(world) {
      const { ids } = await acceptAndStartDrain(world, 300);
      world.pg.stop();
      const stoppedAt = Date.now();
      log('postgres stopped at', await deliveredCount(world.sink), 'delivered');
      // sends during the outage (1 connection at a time, 100 of them): 503 with Retry-After, never 500
      const during = await load(world, 100, SENDS, 5);
      await sleep(Math.max(0, 20_000 - (Date.now() - stoppedAt)));
      world.pg.start();
      log('postgres back after', Math.round((Date.now() - stoppedAt) / 1000), 's');
      const back = Date.now();
      const ms = await drained(world.sink, ids, 240_000);
      // a "sent" mark lost in the outage would show as a duplicate once the row's lease (30 s) and the reconciler's
      // grace (5 s) ran out and the next reconcile (5 s) re-queued it: wait past that
      await sleep(Math.max(0, back + 45_000 - Date.now()));
      const d = await delivery(world.sink, ids);
      const outage = summarizeAnswers(during);
      // the marks the worker could not write while Postgres was away, kept and written later
      const kept = await keptMarks(world.env.DATABASE_URL!, d.received, back);
      return {
        ...pick(d),
        drainSeconds: seconds(ms),
        duringFault: { sendsWhilePostgresDown: outage, sentMarksKeptThroughTheOutage: kept, statusesAtEnd: await statusCounts(world) },
        target: '0 duplicates, 0 lost; sends during the outage 503 with Retry-After',
        met: d.duplicates === 0 && d.lost === 0 && (outage.statuses['503'] ?? 0) === during.length && outage.retryAfter503.every((r) => r !== null),
      };
    },
  },

  /** One of two workers SIGKILLed mid-drain; the other goes on. */
  'worker-killed': {
    drainFirst: true,
    apis: 1,
    workers: 2,
    async run(world) {
      const { answers, ids } = await acceptAndStartDrain(world, 600, 5);
      const held = await sendingIds(world);
      world.workers[0]!.child.kill('SIGKILL');
      const killedAt = Date.now();
      log('worker 1 killed with', held.length, 'rows sending');
      // the rows on the wire at the kill (the dead worker's among them): how long until each is delivered
      const heldMs = await drained(world.sink, held, 180_000);
      const ms = await drained(world.sink, ids, 180_000);
      const drainMs = ms === null ? null : Date.now() - killedAt;
      await sleep(3_000);
      const d = await delivery(world.sink, ids);
      // when did the first copy of each duplicate reach the sink, relative to the kill? (negative: before it)
      const window = d.duplicateIds.map((id) => d.received.get(id)![0]! - killedAt).sort((a, b) => a - b);
      // deliveries in each 5 s after the kill, all rows and the rows on the wire at the kill: where the drain's time went
      const timeline = (rows: string[]) => {
        const buckets: number[] = [];
        for (const id of rows) {
          const at = d.received.get(id)?.at(-1);
          if (at === undefined || at < killedAt) continue;
          const i = Math.floor((at - killedAt) / 5_000);
          for (let j = buckets.length; j <= i; j++) buckets[j] = 0;
          buckets[i]!++;
        }
        return buckets;
      };
      return {
        ...pick(d),
        drainSeconds: seconds(drainMs),
        duringFault: {
          rowsSendingAtKill: held.length,
          thoseDeliveredWithinSeconds: seconds(heldMs),
          firstCopyOfDuplicatesMsFromKill: window,
          deliveredPer5sAfterKill: timeline(ids),
          rowsSendingAtKillDeliveredPer5s: timeline(held),
          answers: summarizeAnswers(answers),
          allDeliveredAfterKillSeconds: seconds(drainMs),
        },
        target: "dead worker's rows delivered within 60 s of the kill; duplicates only sends completed in the last ms",
        met: d.lost === 0 && heldMs !== null && heldMs <= 60_000 && window.every((t) => t > -1000),
      };
    },
  },

  /** Redis down, then sends: each must answer 202 at once; the rows go out once Redis is back. */
  'redis-down-accept': {
    apis: 1,
    workers: 1,
    async run(world) {
      // warm-up, and the worker is up (its start needs Redis); then the same load with Redis up, as the baseline
      const warm = accepted(await load(world, 200, 0, 2));
      await until(async () => (await deliveredCount(world.sink)) >= warm.length, 60_000, 'the warm-up deliveries');
      const baseline = summarizeAnswers(await load(world, 500, 1_000, 2));
      await until(async () => (await deliveredCount(world.sink)) >= warm.length + 500, 60_000, 'the baseline deliveries');
      await fetch(`http://127.0.0.1:${world.sink.httpPort}/reset`, { method: 'POST' });
      await world.redis.kill();
      log('redis killed');
      const during = await load(world, Math.min(SENDS, 1000), 100_000, 2);
      const ids = accepted(during);
      await world.redis.start();
      log('redis back (empty)');
      const ms = await drained(world.sink, ids, 120_000);
      const d = await delivery(world.sink, ids);
      const summary = summarizeAnswers(during);
      return {
        ...pick(d),
        drainSeconds: seconds(ms),
        duringFault: { sendsWhileRedisDown: summary, sameLoadWithRedisUp: baseline },
        target: '202 to every send while Redis is down, p99 < 50 ms (or, on a host busy enough that the same load with Redis up is slower, no more than 1.2 times its p99); all delivered after',
        // the absolute figure holds on a quiet host (27 ms); on a loaded one the baseline of the same run says whether
        // Redis being down slowed accepting, which is what the scenario asks
        met:
          (summary.statuses['202'] ?? 0) === during.length &&
          ((summary.p99Ms ?? Infinity) < 50 || (summary.p99Ms ?? Infinity) <= 1.2 * (baseline.p99Ms ?? 0)) &&
          d.lost === 0,
      };
    },
  },

  /**
   * Webhook retries waiting in Redis when it is lost: 300 message.sent events to a receiver that fails them (500), so
   * their next attempts are delayed jobs; Redis killed and restarted empty; the receiver recovers. Every event must
   * reach it, rebuilt from the webhook_jobs rows (recovery/index.ts), none twice with a 2xx.
   */
  'webhook-retries-redis-lost': {
    apis: 1,
    workers: 1,
    async run(world) {
      const receiver = await webhookReceiver();
      try {
        await world.admin('/webhooks', { account: world.account, url: receiver.url, events: ['message.sent'] });
        const ids = accepted(await load(world, 300, 0, 10));
        // every event failed at least twice: its next attempt (4 s, then 16 s ahead) waits in Redis
        await until(async () => receiver.events.size >= ids.length && [...receiver.attempts.values()].every((n) => n >= 2), 120_000, 'two failed attempts of every event');
        await world.redis.kill();
        log('redis killed with', receiver.events.size, 'events failing');
        await sleep(2_000);
        await world.redis.start();
        const back = Date.now();
        receiver.failing = false;
        log('redis back (empty); the receiver answers 200 now');
        let ms: number | null = null;
        try {
          await until(async () => receiver.delivered.size >= receiver.events.size, 180_000, 'every event delivered', 250);
          ms = Date.now() - back;
        } catch {
          ms = null;
        }
        await sleep(3_000);
        const twice = [...receiver.deliveredTimes.values()].filter((n) => n > 1).length;
        return {
          accepted: receiver.events.size,
          delivered: receiver.delivered.size,
          duplicates: twice,
          lost: receiver.events.size - receiver.delivered.size,
          drainSeconds: seconds(ms),
          duringFault: { events: receiver.events.size, deliveredAfterRedisBackSeconds: seconds(ms), attemptsSeenBeforeTheLoss: 2 },
          target: 'every event delivered after Redis comes back empty (within 3 min), none delivered twice',
          met: ms !== null && receiver.delivered.size === receiver.events.size && twice === 0,
        };
      } finally {
        await receiver.close();
      }
    },
  },

  /**
   * A broadcast scheduled 15 s ahead when Redis is lost (its delayed job with it): it must go out when due, every
   * copy once, rebuilt from its row.
   */
  'scheduled-broadcast-redis-lost': {
    apis: 1,
    workers: 1,
    async run(world) {
      // the worker is up (it stops at start when Redis is not there): one send through it first
      await load(world, 1, 0, 1);
      await until(async () => (await deliveredCount(world.sink)) >= 1, 60_000, 'the worker up');
      await fetch(`http://127.0.0.1:${world.sink.httpPort}/reset`, { method: 'POST' });
      const { list } = await world.admin<{ list: { id: number; key: string } }>('/lists', { account: world.account, name: 'faults', confirm: false, mailbox: world.mailbox });
      const client = new Client({ connectionString: world.env.DATABASE_URL });
      await client.connect();
      await client.query(
        `INSERT INTO subscribers (list_id, email, name, status, confirmed_at) SELECT $1, 'reader' || n || '@example.com', 'Reader', 'active', now() FROM generate_series(1, 200) n`,
        [list.id],
      );
      await client.query('UPDATE lists SET subscriber_count = 200 WHERE id = $1', [list.id]);
      const sendAt = Date.now() + 15_000;
      const { broadcast } = await world.admin<{ broadcast: { id: number } }>('/broadcasts', { list: list.key, subject: 'Later', text: 'Hello', send_at: new Date(sendAt).toISOString() });
      await world.admin(`/broadcasts/${broadcast.id}`, { status: 'sending' }, 'PATCH');
      await world.redis.kill();
      log('redis killed with the broadcast scheduled');
      await sleep(3_000);
      await world.redis.start();
      log('redis back (empty)');
      let ms: number | null = null;
      try {
        await until(async () => (await deliveredCount(world.sink)) >= 200, 120_000, 'the 200 copies', 250);
        ms = Date.now() - sendAt;
      } catch {
        ms = null;
      }
      await sleep(3_000);
      const ids = (await client.query<{ id: string }>('SELECT id::text FROM messages WHERE broadcast_id = $1', [broadcast.id])).rows.map((r) => r.id);
      const status = (await client.query<{ status: string }>('SELECT status::text FROM broadcasts WHERE id = $1', [broadcast.id])).rows[0]?.status;
      await client.end();
      const d = await delivery(world.sink, ids);
      return {
        ...pick(d),
        drainSeconds: seconds(ms),
        duringFault: { copies: ids.length, status, allDeliveredSecondsAfterSendAt: seconds(ms) },
        target: 'the broadcast goes out after Redis comes back empty: 200 copies, each once',
        met: ms !== null && ids.length === 200 && d.lost === 0 && d.duplicates === 0 && status === 'sent',
      };
    },
  },

  /**
   * Postgres stopped for longer than the delivery lease (30 s) while two workers hold 200 rows for a slow server (3 s
   * an email, 5 connections a worker): the marks of what went through are kept in memory, the rows still in the pools'
   * queues go on after the return, the leases run out in Postgres meanwhile, and when it is back the reconciler (in
   * either worker, every 5 s) must not hand those rows to another attempt before the heartbeat (every 5 s) renews them.
   */
  'postgres-longer-than-lease': {
    apis: 1,
    workers: 2,
    drainFirst: true,
    async setup(world) {
      const ports = { smtpPort: await freePort(), httpPort: await freePort() };
      slowSink = startNode('bench/smtp-sink.ts', { SINK_SMTP_PORT: String(ports.smtpPort), SINK_HTTP_PORT: String(ports.httpPort), SINK_DELAY_MS: '3000' }, 'slow-sink');
      await until(async () => (await fetch(`http://127.0.0.1:${ports.httpPort}/count`)).ok, 30_000, 'the slow sink');
      world.sink = ports;
    },
    async teardown() {
      if (slowSink) await stopService(slowSink);
      slowSink = undefined;
    },
    async run(world) {
      const ids = accepted(await load(world, 300));
      for (let i = 0; i < world.workerCount; i++) world.startWorker();
      await until(async () => (await deliveredCount(world.sink)) >= 20, 60_000, 'the first deliveries', 50);
      const onTheWire = (await sendingIds(world)).length;
      world.pg.stop();
      const stoppedAt = Date.now();
      log('postgres stopped with', onTheWire, 'rows sending');
      // past the lease, the reconciler's grace and a tick: every row held at the stop has an expired lease when it is back
      await sleep(LONG_OUTAGE_MS);
      world.pg.start();
      const back = Date.now();
      log('postgres back after', Math.round((back - stoppedAt) / 1000), 's');
      const ms = await drained(world.sink, ids, 240_000);
      // a row handed to a second attempt would show within a lease, a beacon's life (15 s) and a reconcile of the return
      await sleep(Math.max(0, back + 50_000 - Date.now()));
      const d = await delivery(world.sink, ids);
      // the last emails' marks follow their delivery by a statement: every row is given 30 s to be marked
      await until(async () => (await statusCounts(world)).sent === ids.length, 30_000, 'every row marked sent').catch(() => undefined);
      const kept = await keptMarks(world.env.DATABASE_URL!, d.received, back);
      const statusesAtEnd = await statusCounts(world);
      return {
        ...pick(d),
        drainSeconds: seconds(ms),
        duringFault: { rowsSendingAtStop: onTheWire, outageSeconds: seconds(back - stoppedAt), sentMarksKeptThroughTheOutage: kept, statusesAtEnd },
        target: '0 duplicates, 0 lost after an outage longer than the lease, marks kept through it, every row sent at the end',
        met: d.duplicates === 0 && d.lost === 0 && kept > 0 && statusesAtEnd.sent === ids.length,
      };
    },
  },

  /**
   * Idempotency-Keys through faults: (1) 50 sends while Postgres is stopped answer 503; retried under the same keys
   * right after it is back, each must be executed (202), not answered 409; (2) the API SIGKILLed in the middle of 400
   * keyed sends and started again: every key retried until answered (Retry-After honoured) gets its answer within
   * 35 s, and each key is one email, delivered once.
   */
  'idempotency-through-faults': {
    apis: 1,
    workers: 1,
    async run(world) {
      // (1) the outage
      world.pg.stop();
      const during = await load(world, 50, 100_000, 5);
      world.pg.start();
      const back = Date.now();
      const afterOutage = await Promise.all(Array.from({ length: 50 }, (_, i) => sendUntilAnswered(world, 100_000 + i, 60_000)));
      const firstAnswers = summarizeStatuses(afterOutage.map((a) => a.statuses.find((s) => s !== 503 && s !== 0) ?? 0));
      const outageSeconds = seconds(Math.max(...afterOutage.map((a) => a.at)) - back);
      // (2) the API killed mid-load
      const client = new Client({ connectionString: world.env.DATABASE_URL });
      await client.connect();
      const emailRows = async () => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE "to" LIKE 'reader%'`)).rows[0]!.n;
      const load2 = load(world, 400, 200_000, 20);
      // killed with requests in flight: a hundred of the 400 written
      await until(async () => (await emailRows()) >= 150, 60_000, 'a hundred of the keyed sends written', 10);
      world.apis[0]!.service.child.kill('SIGKILL');
      const killedAt = Date.now();
      log('api killed');
      await load2;
      world.apis.shift();
      await world.startApi();
      const restarted = Date.now();
      const retried = await Promise.all(Array.from({ length: 400 }, (_, i) => sendUntilAnswered(world, 200_000 + i, 90_000)));
      const answeredWithin = seconds(Math.max(...retried.map((a) => a.at)) - restarted);
      const ids = [...afterOutage, ...retried].flatMap((a) => a.ids);
      const ms = await drained(world.sink, ids, 120_000);
      await sleep(3_000);
      const d = await delivery(world.sink, ids);
      const rows = await emailRows();
      await client.end();
      const conflicts409 = retried.flatMap((a) => a.conflicts);
      return {
        ...pick(d),
        // an email per key: a key that made two sends would show as more rows than keys
        duplicates: d.duplicates + Math.max(0, rows - 450),
        drainSeconds: seconds(ms),
        duringFault: {
          sendsWhilePostgresDown: summarizeAnswers(during).statuses,
          sameKeysAfterPostgresBack: firstAnswers,
          allAnsweredSecondsAfterPostgresBack: outageSeconds,
          apiDownMs: restarted - killedAt,
          keysAnsweredSecondsAfterApiRestart: answeredWithin,
          answersAfterRestart: summarizeStatuses(retried.flatMap((a) => a.statuses)),
          answers409AfterRestart: conflicts409.length,
          every409HadRetryAfter: conflicts409.every((r) => r !== null),
          emailRows: rows,
          keys: 450,
        },
        target: 'after the outage every key 202 (no 409); after the kill every key answered within 35 s, 409s with Retry-After; one email per key, delivered once',
        met:
          (firstAnswers['202'] ?? 0) === 50 &&
          retried.every((a) => a.ids.length === 1) &&
          answeredWithin !== null && answeredWithin <= 35 &&
          conflicts409.every((r) => r !== null) &&
          rows === 450 && d.duplicates === 0 && d.lost === 0,
      };
    },
  },

  /** Two APIs and two workers on the same database and Redis: each accepted send delivered exactly once. */
  'two-apis-two-workers': {
    apis: 2,
    workers: 2,
    async run(world) {
      const started = Date.now();
      const answers = await load(world, SENDS);
      const ids = accepted(answers);
      const ms = await drained(world.sink, ids, 120_000);
      await sleep(3_000);
      const d = await delivery(world.sink, ids);
      return {
        ...pick(d),
        drainSeconds: seconds(ms === null ? null : Date.now() - started - 3_000),
        duringFault: { answers: summarizeAnswers(answers) },
        target: 'exactly once',
        met: d.duplicates === 0 && d.lost === 0 && d.accepted === SENDS,
      };
    },
  },
};

/** The outage of `postgres-longer-than-lease`: past the lease (30 s), the reconciler's grace (5 s) and a tick. */
const LONG_OUTAGE_MS = 45_000;
let slowSink: Service | undefined;

/**
 * One keyed send repeated as a client should: after no answer or a 503, and after a 409 (the key still in progress)
 * when its Retry-After says, until a 2xx or the deadline. Answers every status seen, each 409's Retry-After, the ids
 * and when the 2xx came.
 */
async function sendUntilAnswered(world: World, i: number, deadlineMs: number): Promise<{ statuses: number[]; conflicts: (string | null)[]; ids: string[]; at: number }> {
  const until = Date.now() + deadlineMs;
  const statuses: number[] = [];
  const conflicts: (string | null)[] = [];
  for (;;) {
    const api = world.apis[world.apis.length - 1]!;
    const answer = await sendOnce(api.port, world.token, i);
    statuses.push(answer.status);
    if (answer.status === 409) conflicts.push(answer.retryAfter);
    if (answer.status === 202 || answer.status === 200) return { statuses, conflicts, ids: answer.ids, at: Date.now() };
    if (![0, 409, 503].includes(answer.status) || Date.now() > until) return { statuses, conflicts, ids: [], at: Date.now() };
    await sleep(answer.retryAfter ? Math.min(5_000, Number(answer.retryAfter) * 1000) : 250);
  }
}

function summarizeStatuses(statuses: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

/** The stack frames every service of this run wrote to its log (a frame: a line "at ..." alone or inside a JSON stack). */
function stackFrames(): { frames: number; byFile: Record<string, number> } {
  const byFile: Record<string, number> = {};
  let frames = 0;
  for (const file of logFiles) {
    if (!fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, 'utf8').replace(/\\n/g, '\n');
    const n = (text.match(/^\s+at \S.*$/gm) ?? []).length;
    if (n) byFile[path.basename(file)] = n;
    frames += n;
  }
  return { frames, byFile };
}

/** A webhook endpoint on loopback: answers 500 while `failing`, then 200; counts attempts and 2xx answers by event. */
async function webhookReceiver() {
  const state = {
    failing: true,
    events: new Set<string>(),
    attempts: new Map<string, number>(),
    delivered: new Set<string>(),
    deliveredTimes: new Map<string, number>(),
  };
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      state.events.add(id);
      state.attempts.set(id, (state.attempts.get(id) ?? 0) + 1);
      if (state.failing) return void res.writeHead(500).end();
      state.delivered.add(id);
      state.deliveredTimes.set(id, (state.deliveredTimes.get(id) ?? 0) + 1);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hooks`;
  return Object.assign(state, { url, close: () => new Promise((resolve) => server.close(resolve)) });
}

// PgBouncer, Redis Cluster, Redis Sentinel: servers of their own (faults/topologies.ts); the webhook workload with no
// fault (faults/webhooks.ts)
const kit = {
  tmp, asRoot, pgPort: () => ownServers!.pg.port, freePort, until, sleep, log, load, accepted, drained, delivery, deliveredCount, summarizeAnswers, sends: SENDS, logsDir: LOGS,
};
Object.assign(scenarios, topologyScenarios(kit), webhookScenarios(kit), lifecycleScenarios(kit));
// SMTP submission: Postgres away under submitting clients, the SMTP process killed mid-DATA (faults/smtp.ts)
Object.assign(scenarios, smtpScenarios({ ...kit, startNode, stopService }));
// replies read while the worker is SIGKILLed and Redis lost: one message.received each (faults/inbound.ts)
Object.assign(scenarios, inboundScenarios(kit));
// Postgres stopped behind PgBouncer under sends (faults/outages.ts)
Object.assign(scenarios, outageScenarios(kit));
// an OAuth2 mailbox's token endpoint answering 500 for a minute under sends (faults/oauth.ts)
Object.assign(scenarios, oauthScenarios({ ...kit, startNode, stopService }));
// the primary of a pg_auto_failover formation SIGKILLed under sends (faults/pg-failover.ts)
Object.assign(scenarios, failoverScenarios(kit));

/**
 * The dependency outages each scenario makes its services see (Postgres or Redis going and coming back); the others
 * make none. `quiet-logs` allows each service log of a scenario two lines at warn or above per outage.
 */
const OUTAGES: Record<string, number> = {
  'redis-lost': 1,
  'postgres-stopped': 1,
  'redis-down-accept': 1,
  'webhook-retries-redis-lost': 1,
  'scheduled-broadcast-redis-lost': 1,
  'postgres-longer-than-lease': 1,
  'idempotency-through-faults': 1,
  'sentinel-failover': 1,
  'smtp-postgres-down': 1,
  'series-redis-lost': 1,
  'inbound-events-restart': 1,
  'pgbouncer-outage': 1,
  'redis-hung': 1,
  'redis-dead-writes': 1,
  'oauth-provider-down': 1,
  'pg-failover': 1,
};

/**
 * Every API and worker log of the scenarios run (at LOG_LEVEL=warn, so each line is warn or above, or a line that is
 * not pino's): no error line, since every fault here is an expected one, and at most two lines per dependency outage.
 */
function quietLogs(ran: string[]): Omit<Result, 'scenario'> {
  let errorLines = 0;
  const overBudget: Record<string, { lines: number; allowed: number; messages: Record<string, number> }> = {};
  const errors: Record<string, number> = {};
  for (const file of logFiles) {
    const base = path.basename(file);
    const scenario = ran.find((name) => base.startsWith(`${name}-api-`) || base.startsWith(`${name}-worker-`) || base.startsWith(`${name}-smtp-`));
    if (!scenario || !fs.existsSync(file)) continue;
    const messages: Record<string, number> = {};
    let lines = 0;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let entry: { level?: number; msg?: string; err?: unknown } = {};
      try {
        entry = JSON.parse(line);
      } catch {
        entry = { level: 40, msg: line.slice(0, 80) };
      }
      if ((entry.level ?? 0) < 40) continue;
      lines++;
      const what = `${entry.msg}${typeof entry.err === 'string' ? `: ${entry.err.slice(0, 60)}` : ''}`;
      messages[what] = (messages[what] ?? 0) + 1;
      if ((entry.level ?? 0) >= 50) {
        errorLines++;
        errors[`${base}: ${what}`] = (errors[`${base}: ${what}`] ?? 0) + 1;
      }
    }
    const allowed = 2 * (OUTAGES[scenario] ?? 0);
    if (lines > allowed) overBudget[base] = { lines, allowed, messages };
  }
  return {
    accepted: 0, delivered: 0, duplicates: 0, lost: 0, drainSeconds: null,
    duringFault: { errorLines, errors, logsOverTheirBudget: overBudget },
    target: 'over every scenario\'s API and worker logs: no error line for an expected outage, at most two lines (warn or above) per dependency outage',
    met: errorLines === 0 && Object.keys(overBudget).length === 0,
  };
}

/** Processes the run started that still live once it is done (its services, its Redis, the topology servers). */
function leftRunning(): string[] {
  const left = [...children].filter((c) => c.exitCode === null && c.signalCode === null).map((c) => `pid ${c.pid} (${c.spawnargs.slice(0, 2).join(' ')})`);
  for (const group of [...serversLeftRunning(), ...formationsLeftRunning()]) left.push(`process group ${group}`);
  if (ownServers && fs.existsSync(path.join(ownServers.pg.dir, 'postmaster.pid'))) left.push('postgres');
  return left;
}

function pick(d: Delivery) {
  return { accepted: d.accepted, delivered: d.delivered, duplicates: d.duplicates, lost: d.lost };
}

async function sendingIds(world: World): Promise<string[]> {
  const client = new Client({ connectionString: world.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query<{ id: string }>("SELECT id::text FROM messages WHERE status = 'sending'")).rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/apps/api/src/server.js'))) throw new Error('run `npm run build` first (npm run faults does)');
  const pg = new OwnPostgres(await freePort());
  const redis = new OwnRedis(await freePort());
  const sink: Sink = { smtpPort: await freePort(), httpPort: await freePort() };
  ownServers = { pg, redis };
  log(`temp dir ${tmp}; postgres :${pg.port}, redis :${redis.port}, sink :${sink.smtpPort}`);
  pg.init();
  pg.start();
  const sinkService = startNode('bench/smtp-sink.ts', { SINK_SMTP_PORT: String(sink.smtpPort), SINK_HTTP_PORT: String(sink.httpPort) });
  await until(async () => (await fetch(`http://127.0.0.1:${sink.httpPort}/count`)).ok, 30_000, 'the sink');

  const results: Result[] = [];
  try {
    for (const [name, scenario] of Object.entries(scenarios)) {
      if (ONLY && !ONLY.includes(name)) continue;
      log(`--- ${name}`);
      if (!pg.running()) pg.start();
      await redis.start();
      await fetch(`http://127.0.0.1:${sink.httpPort}/reset`, { method: 'POST' });
      const world = new World(name, pg, redis, sink);
      try {
        await scenario.setup?.(world);
        for (let i = 0; i < scenario.apis; i++) await world.startApi();
        await world.tenant();
        world.workerCount = scenario.workers;
        if (!scenario.drainFirst) for (let i = 0; i < scenario.workers; i++) world.startWorker();
        const started = Date.now();
        const outcome = await scenario.run(world);
        results.push({ scenario: name, ...outcome });
        log(`${name}: ${outcome.met ? 'MET' : 'NOT MET'} in ${Math.round((Date.now() - started) / 1000)} s`, JSON.stringify(outcome));
      } catch (err) {
        results.push({ scenario: name, accepted: 0, delivered: 0, duplicates: 0, lost: 0, drainSeconds: null, duringFault: null, target: '', met: false, notes: String(err) });
        log(`${name} failed: ${String(err)}`);
        for (const s of [...world.apis.map((a) => a.service), ...world.workers]) log(s.output().slice(-2000));
      } finally {
        await world.stop();
        await scenario.teardown?.();
        await redis.kill();
      }
    }
    if (!ONLY || ONLY.includes('quiet-logs')) {
      const quiet = quietLogs(results.map((r) => r.scenario));
      results.push({ scenario: 'quiet-logs', ...quiet });
      log(`quiet-logs: ${quiet.met ? 'MET' : 'NOT MET'}`, JSON.stringify(quiet.duringFault));
    }
    // the services that lived through every scenario above: a stack frame for an expected fault is noise in an
    // operator's log (docs/reliability.md, "Logs")
    if (!ONLY || ONLY.includes('logs')) {
      const { frames, byFile } = stackFrames();
      log(`logs: ${frames} stack frames in ${logFiles.length} service logs`);
      results.push({ scenario: 'logs', accepted: 0, delivered: 0, duplicates: 0, lost: 0, drainSeconds: null, duringFault: { serviceLogs: logFiles.length, stackFrames: frames, byFile }, target: 'fewer than 30 stack frames over every service log of the run', met: frames < 30 });
    }
  } finally {
    await stopService(sinkService);
    try {
      pg.stop();
    } catch {
      // already stopped
    }
  }

  // nothing the suite started may outlive it (a PgBouncer under runuser once did)
  const left = leftRunning();
  results.push({ scenario: 'left-running', accepted: 0, delivered: 0, duplicates: 0, lost: 0, drainSeconds: null, duringFault: { left }, target: 'no process the suite started still running at its end', met: left.length === 0 });

  console.log('\n| scenario | accepted | delivered | duplicates | lost | time to drain (s) | during the fault | target | met |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.scenario} | ${r.accepted} | ${r.delivered} | ${r.duplicates} | ${r.lost} | ${r.drainSeconds ?? '-'} | ${JSON.stringify(r.duringFault)} | ${r.target} | ${r.met ? 'yes' : 'NO'} |`);
  }
  // FAULTS_ONLY: the other scenarios' rows of the last run stay
  const file = path.join(__dirname, 'results.json');
  const kept = ONLY && fs.existsSync(file) ? ((JSON.parse(fs.readFileSync(file, 'utf8')) as { results?: Result[] }).results ?? []).filter((r) => !ONLY.includes(r.scenario)) : [];
  const out = { date: new Date().toISOString(), machine: `${os.cpus().length} cores, node ${process.version}`, sends: SENDS, results: [...kept, ...results] };
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exitCode = results.every((r) => r.met) ? 0 : 1;
}

/** On any exit: our service processes, our Redis and our Postgres go too (the run's own, never the machine's). */
let ownServers: { pg: OwnPostgres; redis: OwnRedis } | undefined;
const cleanup = () => {
  for (const child of children) child.kill('SIGKILL');
  if (!ownServers) return;
  ownServers.redis.killNow();
  if (fs.existsSync(path.join(ownServers.pg.dir, 'postmaster.pid'))) {
    try {
      ownServers.pg.stopNow();
    } catch {
      // already gone
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

main().catch((err: unknown) => {
  console.error(err);
  cleanup();
  process.exit(1);
});
