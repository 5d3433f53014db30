/**
 * `npm run bench`: accept, delivery, subscriber and prospect throughput plus peak memory, each against a baseline
 * measured in the same run (absolute figures on a shared 2-core machine vary; ratios travel). Starts its own API,
 * worker, SMTP sink and baselines on loopback, against the local Postgres and Redis, in a database and Redis prefix of
 * its own that it removes afterwards. Prints a table and writes bench/results.json.
 *
 * BENCH_SECONDS (default 15) sets each load phase's length; BENCH_MESSAGES (default 5000) the delivery batch.
 * Every measured process is warmed up first (its JIT and connections), outside the timed window: the accept loads by
 * 2 s of the same load, the delivery phase by WARMUP_MESSAGES sent through the same path, on both sides. The accept
 * and delivery phases load our side and the baseline in turns (`inTurns`), so the host's drift weighs on both alike.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import nodemailer from 'nodemailer';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { htmlToText } from '../apps/core/src/delivery/compose';
import { API_NODE_FLAGS } from '../scripts/node-options';
import { growthPhase, KEPT_DATABASE } from './growth';
import { memoryPhase, PUBLIC_REQUESTS } from './memory';
import { scalePhase } from './scale';
import { domainsPhase } from './domains';
import { schedulerPhase } from './scheduler';
import { templatesPhase } from './templates';
import { batchPhase } from './batch';
import { smtpPhase } from './smtp';
import { mxPhase } from './mx';

const ROOT = path.resolve(__dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const CONNECTIONS = 50;
/**
 * Emails sent through the same path before a delivery or broadcast measurement, on each side. 500 were not enough:
 * after them, the worker's CPU an email kept falling over the next 4,000 (1,000 at a time: 1.10, 0.80, 0.73, 0.63,
 * 0.60, 0.57 ms; the API's 0.48 to 0.21), its V8 threads still compiling, so a 5,000-send turn measured the JIT's
 * warm-up more than the service (bench/README.md, "How it measures").
 */
const WARMUP_MESSAGES = 5000;
const PG_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STAMP = Date.now().toString(36);
// NODE_ENV=production takes an admin token of at least 32 random characters
const ADMIN_TOKEN = crypto.randomBytes(24).toString('hex');
const SECRET_KEY = 'ab'.repeat(32);
/** the broadcast phase's list size; BENCH_ONLY=main (accept: its first phase alone), broadcast, scheduler, memory, growth, scale, templates, batch, domains, smtp or mx runs that phase alone */
const BROADCAST_SUBSCRIBERS = Number(process.env.BENCH_BROADCAST ?? 100_000);
const ONLY = process.env.BENCH_ONLY ?? '';
/** BENCH_PORT_BASE moves the six loopback ports (two benches on one machine must not share a sink) */
const PORT_BASE = Number(process.env.BENCH_PORT_BASE ?? 39100);
const PORTS = { api: PORT_BASE, baseline: PORT_BASE + 1, sinkSmtp: PORT_BASE + 2, sinkHttp: PORT_BASE + 3, slowSmtp: PORT_BASE + 4, slowHttp: PORT_BASE + 5, submission: PORT_BASE + 6, mx: PORT_BASE + 7, mxBaseline: PORT_BASE + 8 };

const children: ChildProcess[] = [];

function start(entry: string, env: Record<string, string>): ChildProcess {
  // the services run compiled, as `npm start` runs them (npm run bench builds first); the bench's own helpers through
  // tsx. One process per service, so /proc/<pid> is the service itself.
  const compiled = entry.startsWith('apps/');
  // BENCH_CPU_PROF=<dir>: each service writes a V8 CPU profile there when it stops (figures are then not comparable)
  const profile = compiled && process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // the API, the SMTP process and the MX with the V8 flag they ship with (scripts/node-options.ts)
  const flags = entry === 'apps/api/src/server.ts' || entry === 'apps/smtp/src/main.ts' || entry === 'apps/mx/src/main.ts' ? API_NODE_FLAGS : [];
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

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Peak resident set size of a live process, in MB (VmHWM). */
function peakRssMb(child: ChildProcess): number {
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
function cpuMsByName(names: string[]): Record<string, number> {
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
function cpuMs(child: ChildProcess): number {
  const fields = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime and stime, in clock ticks (USER_HZ = 100)
}

/** CPU used so far by the server under load, Postgres, Redis and this process (the load generator runs in it), in ms. */
function acceptCpu(server: ChildProcess): Record<string, number> {
  const own = process.cpuUsage();
  return { server: cpuMs(server), ...cpuMsByName(['postgres', 'redis-server']), 'load generator': (own.user + own.system) / 1000 };
}

/** Each counter's growth from `before` to `after`, divided by the requests (or emails) it served. */
function perRequest(before: Record<string, number>, after: Record<string, number>, requests: number, digits = 3): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, +((v - before[k]!) / Math.max(1, requests)).toFixed(digits)]));
}

/**
 * Before each timed load, as pgbench does (it vacuums and analyses first): the phase's database analysed, then a
 * checkpoint.
 * - ANALYZE: each phase has a fresh database, filled by its own warm-up seconds before the clock starts, and its
 *   services' prepared statements were planned on empty tables. Autovacuum would analyse them within a minute, and
 *   Postgres then re-plans every cached plan (as it does in a running service); a 15-second phase ends first, so it
 *   measured plans for empty tables: the "sent" mark scanned the whole messages table, the subscriber add the whole
 *   subscribers table (seen with auto_explain). ANALYZE measures the service as it runs after its first minute.
 * - CHECKPOINT: the dirty pages of a phase (or of an earlier run's 100,000-row phases) are written now, not in the
 *   middle of the next measurement, where the flush and the full-page images that follow a checkpoint cost the write
 *   paths a quarter of their throughput.
 */
async function settle(databaseUrl?: string): Promise<void> {
  await withPg(databaseUrl ?? `${PG_SERVER}/postgres`, async (pg) => {
    if (databaseUrl) await pg.query('ANALYZE');
    await pg.query('CHECKPOINT'); // the whole cluster's, from any database
  });
}

/** Postgres's own counters for one database (pg_stat_database), read after a pause so the backends have reported. */
async function pgCounters(databaseUrl: string): Promise<Record<'transactions' | 'inserted' | 'updated' | 'deleted' | 'fetched', number>> {
  await new Promise((r) => setTimeout(r, 1_100));
  return withPg(databaseUrl, async (pg) => {
    const { rows } = await pg.query(
      `SELECT (xact_commit + xact_rollback)::float8 AS transactions, tup_inserted::float8 AS inserted, tup_updated::float8 AS updated,
              tup_deleted::float8 AS deleted, tup_fetched::float8 AS fetched
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    return rows[0];
  });
}

/** One connection to `url` for the length of `use`. */
async function withPg<T>(url: string, use: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: url });
  await pg.connect();
  try {
    return await use(pg);
  } finally {
    await pg.end();
  }
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const up = (port: number, p = '/healthz') => until(async () => (await fetch(`http://127.0.0.1:${port}${p}`)).ok, 60_000, `port ${port}`);

async function admin<T>(pathname: string, body: unknown, method = 'POST'): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${PORTS.api}/admin/api${pathname}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== (method === 'POST' ? 201 : 200)) throw new Error(`bench: admin ${method} ${pathname} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

interface Tenant {
  token: string;
  account: number;
  mailbox: number;
}

/**
 * The delivery phase's DKIM key: both sides sign every email with it, our worker through the mailbox's `dkim` setting,
 * the baseline through nodemailer's own `dkim` option (RSA 2048, relaxed/relaxed, as receivers see most mail).
 */
const BENCH_DKIM = (() => {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { domain: 'example.com', selector: 'bench', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
})();

async function makeTenant(smtpPort = PORTS.sinkSmtp, options: { dkim?: boolean } = {}): Promise<Tenant> {
  const { account } = await admin<{ account: { id: number } }>('/accounts', { name: 'bench' });
  const { mailbox } = await admin<{ mailbox: { id: number } }>('/mailboxes', {
    account: account.id,
    address: 'bench@example.com',
    smtp: `smtp://127.0.0.1:${smtpPort}`,
    daily_limit: 100_000,
    gap_seconds: 0,
    ...(options.dkim ? { dkim: BENCH_DKIM } : {}),
  });
  const { key } = await admin<{ key: { token: string } }>('/keys', {
    account: account.id,
    name: 'bench',
    mailbox: mailbox.id,
    daily_limit: 10_000_000,
    prospects: true,
  });
  return { token: key.token, account: account.id, mailbox: mailbox.id };
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total2xx: number;
}

async function load(options: autocannon.Options): Promise<Load> {
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total2xx: result['2xx'],
  };
}

/**
 * How many turns each side of a same-run comparison gets. The host's speed drifts within minutes (bare Express did
 * 2,670 and then 4,795 req/s 15 minutes apart on 23 Nov), so a baseline measured once, before or after our side, puts
 * that drift into the ratio. In turns (A B, B A, A B...), both sides see the same stretch of the host.
 */
const TURNS = 3;
/** The delivery phase's turns: each is MESSAGES emails a side. */
const DELIVERY_TURNS = 2;

/** Runs `a` and `b` `turns` times each, alternating which goes first, so a steady drift weighs on both alike. */
async function inTurns(turns: number, a: () => Promise<void>, b: () => Promise<void>): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (i % 2 === 0) {
      await a();
      await b();
    } else {
      await b();
      await a();
    }
  }
}

/** Equal windows of one load as one: the mean rate, the counts added up, the median p50 and the worst p99. */
function combined(windows: Load[]): Load {
  const sum = (pick: (w: Load) => number) => windows.reduce((total, w) => total + pick(w), 0);
  const p50s = windows.map((w) => w.p50).sort((x, y) => x - y);
  return {
    rps: Math.round(sum((w) => w.rps) / windows.length),
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...windows.map((w) => w.p99)),
    errors: sum((w) => w.errors),
    non2xx: sum((w) => w.non2xx),
    total2xx: sum((w) => w.total2xx),
  };
}

/** The mean of each key over several per-request figures. */
/**
 * The whole pipeline's CPU an email (API + worker + Postgres + Redis; the sink left out, as on nodemailer's side) over
 * nodemailer's own CPU an email sending the same emails to the same sink (the target: at most 1.5, bench/README.md).
 */
function pipelineCpuRatio(perEmail: Record<string, number>, nodemailer: number): number {
  const pipeline = Object.entries(perEmail).filter(([k]) => k !== 'sink').reduce((total, [, v]) => total + v, 0);
  return +(pipeline / nodemailer).toFixed(2);
}

function meanOf(figures: Record<string, number>[]): Record<string, number> {
  return Object.fromEntries(Object.keys(figures[0]!).map((k) => [k, +(figures.reduce((total, f) => total + f[k]!, 0) / figures.length).toFixed(3)]));
}

const sendBody = JSON.stringify({ to: 'reader@example.com', subject: 'Benchmark', text: 'Hello from the benchmark.' });
const jsonHeaders = (token?: string) => ({ 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) });

async function sinkCount(): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/count`)).json()) as { count: number }).count;
}

async function main(): Promise<void> {
  const databases: string[] = [];
  const serviceEnv = (phase: string) => {
    const database = `ms_bench_${STAMP}_${phase}`;
    databases.push(database);
    return {
      DATABASE_URL: `${PG_SERVER}/${database}`,
      REDIS_URL,
      REDIS_PREFIX: `msbench:${STAMP}:${phase}`,
      ADMIN_TOKEN,
      SECRET_KEY,
      PORT: String(PORTS.api),
      PUBLIC_URL: `http://127.0.0.1:${PORTS.api}`,
    };
  };
  const results: Record<string, unknown> = { date: new Date().toISOString(), machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`, seconds: SECONDS, messages: MESSAGES };

  const sink = start('bench/smtp-sink.ts', { SINK_SMTP_PORT: String(PORTS.sinkSmtp), SINK_HTTP_PORT: String(PORTS.sinkHttp) });
  await up(PORTS.sinkHttp, '/count');

  try {
    if (!ONLY || ONLY === 'main' || ONLY === 'accept') await mainPhases(results, serviceEnv, sink);
    if (!ONLY || ONLY === 'broadcast') results.broadcast = await broadcastPhase(serviceEnv('broadcast'));
    if (!ONLY || ONLY === 'scheduler') results.scheduler = await schedulerBench(serviceEnv('scheduler'));
    if (!ONLY || ONLY === 'memory') results.memory = { ...(results.memory as object), ...(await memoryBench(serviceEnv('memory'))) };
    if (!ONLY || ONLY === 'scale') results.scale = await scaleBench(serviceEnv('scale'));
    if (!ONLY || ONLY === 'growth') results.growth = await growthBench(serviceEnv);
    // the delivery phase with a stored template (a 20 KB layout, 10 variables) against the same emails sent plain
    if (!ONLY || ONLY === 'templates') {
      const env = serviceEnv('templates');
      results.templates = await templatesPhase({
        apiPort: PORTS.api, messages: MESSAGES, connections: CONNECTIONS, turns: DELIVERY_TURNS,
        startApi: () => start('apps/api/src/server.ts', env), startWorker: () => start('apps/worker/src/main.ts', env),
        stop, up, makeTenant: () => makeTenant(), admin, sinkCount, until,
        resetSink: async () => void (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' })),
        settle: () => settle(env.DATABASE_URL),
      });
    }
    // POST /send/batch with 100 messages a request against the same messages sent one a request (bench/batch.ts)
    if (!ONLY || ONLY === 'batch') {
      const env = serviceEnv('batch');
      results.batch = await batchPhase({
        apiPort: PORTS.api, messages: MESSAGES, connections: CONNECTIONS, turns: 3,
        startApi: () => start('apps/api/src/server.ts', env), stop, up, makeTenant: () => makeTenant(), settle: () => settle(env.DATABASE_URL),
      });
    }
    if (!ONLY || ONLY === 'domains') results.domains = await domainsPhase(serviceEnv('domains'));
    if (!ONLY || ONLY === 'smtp') results.smtp = await smtpBench(serviceEnv('smtp'));
    if (!ONLY || ONLY === 'mx') results.mx = await mxPhase({ apiPort: PORTS.api, mxPort: PORTS.mx, baselinePort: PORTS.mxBaseline, env: serviceEnv('mx'), start, stop, up, makeTenant: () => makeTenant(), peakRssMb });
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await cleanup(databases);
  }

  fs.writeFileSync(path.join(__dirname, 'results.json'), JSON.stringify(results, null, 2) + '\n');
  print(results);
  void sink;
}

type RawMail = Parameters<ReturnType<typeof nodemailer.createTransport>['sendMail']>[0];
const plainMail = (i: number): RawMail => ({ to: 'reader@example.com', subject: 'Benchmark', text: `Hello ${i}` });

/**
 * nodemailer's own pool straight to the sink: the baseline of the delivery and broadcast phases, with `mail` building
 * the same kind of email the phase sends.
 */
/**
 * nodemailer's pool sending `messages` emails straight to the sink from this process: the seconds it took, and this
 * process's CPU an email meanwhile (it does nothing else then: that is nodemailer's own cost, the sink's left out).
 */
async function rawPool(messages: number, mail: (i: number) => RawMail = plainMail, options: { dkim?: 'pem' | 'key' } = {}): Promise<{ seconds: number; cpuMsPerEmail: number }> {
  // 'key': the key parsed once, as a careful user gives it (a KeyObject); 'pem': as text, which nodemailer parses for
  // every email (about half its CPU an email): the strongest baseline is the first, the second is kept for reference
  const privateKey = options.dkim === 'key' ? (crypto.createPrivateKey(BENCH_DKIM.private_key) as unknown as string) : BENCH_DKIM.private_key;
  const dkim = options.dkim ? { domainName: BENCH_DKIM.domain, keySelector: BENCH_DKIM.selector, privateKey } : undefined;
  const pool = nodemailer.createTransport({ pool: true, maxConnections: 5, host: '127.0.0.1', port: PORTS.sinkSmtp, secure: false, ignoreTLS: true, dkim });
  const sendAll = async (n: number, tag: string) => {
    // in waves, so the bench process itself does not hold 100,000 pending emails at once
    for (let from = 0; from < n; from += 5000) {
      await Promise.all(
        Array.from({ length: Math.min(5000, n - from) }, (_, j) =>
          pool.sendMail({ from: 'bench@example.com', ...mail(from + j), messageId: `<${tag}${from + j}.${STAMP}@example.com>` }),
        ),
      );
    }
  };
  await sendAll(WARMUP_MESSAGES, 'w');
  await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
  const b0 = performance.now();
  const cpu0 = process.cpuUsage();
  await sendAll(messages, 'b');
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - b0) / 1000;
  pool.close();
  return { seconds, cpuMsPerEmail: (cpu.user + cpu.system) / 1000 / messages };
}

/**
 * 5. broadcast: BROADCAST_SUBSCRIBERS active subscribers (inserted with one SQL statement) sent by one worker, from the
 * PATCH that starts it to the last copy at the sink, against nodemailer's pool sending as many; the worker's peak RSS.
 */
async function broadcastPhase(env: Record<string, string>) {
  const api = start('apps/api/src/server.ts', env);
  await up(PORTS.api);
  const tenant = await makeTenant();
  const { list } = await admin<{ list: { key: string } }>('/lists', { account: tenant.account, name: 'bench', confirm: false, mailbox: tenant.mailbox });
  const pg = new Client({ connectionString: env.DATABASE_URL });
  await pg.connect();
  await pg.query(
    `INSERT INTO subscribers (list_id, email, name, status, confirmed_at, fields)
     SELECT l.id, 'reader' || n || '@example.com', 'Reader ' || n, 'active', now(), jsonb_build_object('n', n)
     FROM lists l, generate_series(1, $2::int) AS n WHERE l.key = $1`,
    [list.key, BROADCAST_SUBSCRIBERS],
  );
  await pg.query('UPDATE lists SET subscriber_count = $2 WHERE key = $1', [list.key, BROADCAST_SUBSCRIBERS]);
  await pg.end();
  const worker = start('apps/worker/src/main.ts', env);
  // warm the worker up through the ordinary send path, outside the timed window. The sink still counts the main
  // phases' emails: without this reset the wait below ended at once, and up to WARMUP_MESSAGES warm-up emails landed
  // inside the timed window, counted as broadcast copies (at 5,000, the clock stopped 2,650 copies early and the
  // worker was told to stop with the broadcast still running)
  await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
  await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: 10, amount: WARMUP_MESSAGES });
  await until(async () => (await sinkCount()) >= WARMUP_MESSAGES, 5 * 60_000, 'the warm-up deliveries');
  await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
  const { broadcast } = await admin<{ broadcast: { id: number } }>('/broadcasts', { list: list.key, subject: 'Hello {{name}}', html: '<p>Hello {{name}}, number {{fields.n}}.</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>' });
  await settle(env.DATABASE_URL);
  const t0 = performance.now();
  const patched = await fetch(`http://127.0.0.1:${PORTS.api}/admin/api/broadcasts/${broadcast.id}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ status: 'sending' }),
  });
  if (!patched.ok) throw new Error(`bench: PATCH broadcast answered ${patched.status}`);
  await until(async () => (await sinkCount()) >= BROADCAST_SUBSCRIBERS, 30 * 60_000, `${BROADCAST_SUBSCRIBERS} broadcast copies`);
  const seconds = (performance.now() - t0) / 1000;
  const workerRss = peakRssMb(worker);
  await stop(worker);
  await stop(api);
  // the baseline sends what a copy is: html with a generated text part and the three list headers
  const { seconds: baselineSeconds } = await rawPool(BROADCAST_SUBSCRIBERS, (i) => {
    const url = `http://127.0.0.1:${PORTS.api}/u/${i}.${'x'.repeat(32)}`;
    const html = `<p>Hello Reader ${i}, number ${i}.</p><p><a href="${url}">Unsubscribe</a></p>`;
    return {
      to: `reader${i}@example.com`,
      subject: `Hello Reader ${i}`,
      html,
      text: htmlToText(html),
      headers: {
        'List-Unsubscribe': { prepared: true, value: `<${url}>` },
        'List-Unsubscribe-Post': { prepared: true, value: 'List-Unsubscribe=One-Click' },
        'List-Id': { prepared: true, value: '"bench" <bench.example.com>' },
      },
    };
  });
  return {
    subscribers: BROADCAST_SUBSCRIBERS,
    perSecond: Math.round(BROADCAST_SUBSCRIBERS / seconds),
    baselinePerSecond: Math.round(BROADCAST_SUBSCRIBERS / baselineSeconds),
    ratio: +(baselineSeconds / seconds).toFixed(2),
    workerPeakRssMb: workerRss,
  };
}

/** memory under an unauthenticated trickle and under big sends (bench/memory.ts) */
function memoryBench(env: Record<string, string>) {
  return memoryPhase({
    apiPort: PORTS.api,
    startApi: () => start('apps/api/src/server.ts', env),
    startWorker: () => start('apps/worker/src/main.ts', env),
    stop,
    up: () => up(PORTS.api),
    makeTenant,
    makePublicList,
    sinkCount,
    resetSink: async () => void (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' })),
    peakRssMb,
  });
}

/** A list with a hosted form and PUBLIC_REQUESTS active subscribers, and their one-click unsubscribe paths. */
async function makePublicList(): Promise<{ formPath: string; unsubscribePaths: string[] }> {
  const tenant = await makeTenant();
  const { list } = await admin<{ list: { id: number; key: string } }>('/lists', { account: tenant.account, name: 'bench form', confirm: false, mailbox: tenant.mailbox });
  for (let i = 0; i < PUBLIC_REQUESTS; i++) {
    const res = await fetch(`http://127.0.0.1:${PORTS.api}/api/v1/subscribers`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ list: list.key, email: `reader${i}@example.com` }),
    });
    if (res.status !== 200) throw new Error(`bench: adding a subscriber answered ${res.status}`);
  }
  const page = await fetch(`http://127.0.0.1:${PORTS.api}/admin/api/lists/${list.id}/subscribers?limit=1000`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  const { subscribers } = (await page.json()) as { subscribers: { id: number }[] };
  // the links their emails would carry, made as the worker makes them (broadcasts/copy.ts), under the service's SECRET_KEY
  process.env.SECRET_KEY = SECRET_KEY;
  const { unsubscribeToken } = await import('../apps/core/src/broadcasts/copy');
  return { formPath: `/f/${list.key}`, unsubscribePaths: subscribers.map((s) => `/u/${unsubscribeToken(s.id)}`) };
}

/** SMTP submission against POST /api/v1/send, and the SMTP process's memory (bench/smtp.ts) */
function smtpBench(env: Record<string, string>) {
  return smtpPhase({ apiPort: PORTS.api, smtpPort: PORTS.submission, env, start, stop, up, makeTenant: () => makeTenant(), peakRssMb });
}

/** a year of data against empty tables, and a broadcast to a million (bench/growth.ts) */
function growthBench(serviceEnv: (phase: string) => Record<string, string>) {
  return growthPhase({
    apiPort: PORTS.api,
    env: serviceEnv,
    keptEnv: () => ({ ...serviceEnv('growth_kept_prefix'), DATABASE_URL: `${PG_SERVER}/${KEPT_DATABASE}` }),
    start,
    stop,
    up: () => up(PORTS.api),
    admin,
    makeTenant,
    sinkCount,
    resetSink: async () => void (await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' })),
    peakRssMb,
    settle: (url) => settle(url),
    adminToken: ADMIN_TOKEN,
  });
}

/** workers 1, 2 and 4 against a sink that waits 50 ms per email, and nodemailer's pool as wide (bench/scale.ts) */
function scaleBench(env: Record<string, string>) {
  return scalePhase({
    ports: { api: PORTS.api, smtp: PORTS.slowSmtp, http: PORTS.slowHttp },
    startSink: (env) => start('bench/smtp-sink.ts', env),
    startApi: () => start('apps/api/src/server.ts', env),
    startWorker: () => start('apps/worker/src/main.ts', env),
    stop,
    up,
    makeTenant: () => makeTenant(PORTS.slowSmtp),
    jsonHeaders,
    sendBody,
  });
}

/** 5. the outreach scheduler: 100,000 due prospects, 200 running campaigns, 50 mailboxes (bench/scheduler.ts) */
function schedulerBench(env: Record<string, string>) {
  return schedulerPhase({
    databaseUrl: env.DATABASE_URL!,
    redisUrl: REDIS_URL,
    redisPrefix: env.REDIS_PREFIX!,
    sinkSmtpPort: PORTS.sinkSmtp,
    seconds: SECONDS,
    startWorker: () => start('apps/worker/src/main.ts', env),
    stop,
  });
}

async function mainPhases(results: Record<string, unknown>, serviceEnv: (phase: string) => Record<string, string>, sink: ChildProcess): Promise<void> {
  {
    // 1. accept: the API alone (no worker), against bare Express, both up and loaded in turns (see `inTurns`)
    const baseline = start('bench/baseline-express.ts', { PORT: String(PORTS.baseline) });
    await until(async () => (await fetch(`http://127.0.0.1:${PORTS.baseline}/api/v1/send`, { method: 'POST', headers: jsonHeaders(), body: sendBody })).status === 202, 30_000, 'baseline');
    const acceptEnv = serviceEnv('accept');
    let api = start('apps/api/src/server.ts', acceptEnv);
    await up(PORTS.api);
    let tenant = await makeTenant();
    const bare: autocannon.Options = { url: `http://127.0.0.1:${PORTS.baseline}/api/v1/send`, method: 'POST', headers: jsonHeaders(), body: sendBody };
    const ours: autocannon.Options = { url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody };
    await load({ ...bare, duration: 2 });
    await load({ ...ours, duration: 2 });
    await settle(acceptEnv.DATABASE_URL);
    const windows = { bare: [] as Load[], ours: [] as Load[] };
    const cpu = { bare: [] as Record<string, number>[], ours: [] as Record<string, number>[] };
    const turn = (side: 'bare' | 'ours', server: ChildProcess, options: autocannon.Options) => async () => {
      const before = acceptCpu(server);
      const window = await load({ ...options, duration: SECONDS / TURNS });
      windows[side].push(window);
      cpu[side].push(perRequest(before, acceptCpu(server), window.total2xx));
    };
    await inTurns(TURNS, turn('bare', baseline, bare), turn('ours', api, ours));
    const acceptRss = peakRssMb(api);
    await stop(api);
    await stop(baseline);
    const accept = combined(windows.ours);
    const acceptBaseline = combined(windows.bare);
    results.accept = {
      api: accept,
      baseline: acceptBaseline,
      ratio: +(accept.rps / acceptBaseline.rps).toFixed(2),
      turns: windows.ours.map((w, i) => +(w.rps / windows.bare[i]!.rps).toFixed(2)),
      apiPeakRssMb: acceptRss,
      cpuMsPerRequest: { api: meanOf(cpu.ours), baseline: meanOf(cpu.bare) },
    };

    if (ONLY === 'accept') return;

    // 2. delivery: MESSAGES accepted sends drained by one worker, against nodemailer's pool straight to the sink; both
    // sides DKIM-sign every email with the same RSA key
    const env = serviceEnv('delivery');
    api = start('apps/api/src/server.ts', env);
    await up(PORTS.api);
    tenant = await makeTenant(PORTS.sinkSmtp, { dkim: true });
    const worker = start('apps/worker/src/main.ts', env);
    await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
    await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: CONNECTIONS, amount: WARMUP_MESSAGES });
    await until(async () => (await sinkCount()) >= WARMUP_MESSAGES, 5 * 60_000, 'the warm-up deliveries');
    await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
    await settle(env.DATABASE_URL);
    // our side and nodemailer's in turns, as in the accept phase; the CPU and Postgres figures are of our turns
    const seconds = { ours: 0, bare: 0 };
    let acceptErrors = 0;
    const perEmail = { cpu: [] as Record<string, number>[], pg: [] as Record<string, number>[] };
    const ourTurn = async () => {
      await fetch(`http://127.0.0.1:${PORTS.sinkHttp}/reset`, { method: 'POST' });
      const pg0 = await pgCounters(env.DATABASE_URL!);
      const cpu0 = { api: cpuMs(api), worker: cpuMs(worker), sink: cpuMs(sink), ...cpuMsByName(['postgres', 'redis-server']) };
      const t0 = performance.now();
      const accepted = await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: CONNECTIONS, amount: MESSAGES });
      await until(async () => (await sinkCount()) >= MESSAGES, 10 * 60_000, `${MESSAGES} deliveries`);
      seconds.ours += (performance.now() - t0) / 1000;
      const cpu1 = { api: cpuMs(api), worker: cpuMs(worker), sink: cpuMs(sink), ...cpuMsByName(['postgres', 'redis-server']) };
      acceptErrors += accepted.errors + accepted.non2xx;
      perEmail.cpu.push(perRequest(cpu0, cpu1, MESSAGES));
      // the statements' count shows as transactions: every statement of the hot path is its own (or a batch's) transaction
      perEmail.pg.push(perRequest(pg0, await pgCounters(env.DATABASE_URL!), MESSAGES, 2));
    };
    // nodemailer with its key parsed once (the best it does) and as PEM text (for reference), each side in turns with ours
    const bareCpu = { key: [] as number[], pem: [] as number[] };
    const pemSeconds = { value: 0 };
    const bareTurn = async () => {
      const best = await rawPool(MESSAGES, plainMail, { dkim: 'key' });
      seconds.bare += best.seconds;
      bareCpu.key.push(best.cpuMsPerEmail);
      const pem = await rawPool(MESSAGES, plainMail, { dkim: 'pem' });
      pemSeconds.value += pem.seconds;
      bareCpu.pem.push(pem.cpuMsPerEmail);
    };
    await inTurns(DELIVERY_TURNS, ourTurn, bareTurn);
    const workerRss = peakRssMb(worker);
    const deliveryApiRss = peakRssMb(api);
    const cpuMsPerEmail = meanOf(perEmail.cpu);
    const mean = (figures: number[]) => +(figures.reduce((a, b) => a + b, 0) / figures.length).toFixed(3);
    const nodemailerCpuMsPerEmail = mean(bareCpu.key);
    const nodemailerPemCpuMsPerEmail = mean(bareCpu.pem);
    const ratioBest = +(seconds.bare / seconds.ours).toFixed(2);
    const pipelineCpuRatioBest = pipelineCpuRatio(cpuMsPerEmail, nodemailerCpuMsPerEmail);
    results.delivery = {
      messages: MESSAGES,
      turns: DELIVERY_TURNS,
      acceptErrors,
      perSecond: Math.round((MESSAGES * DELIVERY_TURNS) / seconds.ours),
      baselinePerSecond: Math.round((MESSAGES * DELIVERY_TURNS) / seconds.bare),
      // against the strongest baseline (nodemailer given a KeyObject); `ratio` and `pipelineCpuRatio` are kept as their
      // old names for readers of results.json
      ratio: ratioBest,
      ratioBest,
      pemPerSecond: Math.round((MESSAGES * DELIVERY_TURNS) / pemSeconds.value),
      ratioPem: +(pemSeconds.value / seconds.ours).toFixed(2),
      workerPeakRssMb: workerRss,
      apiPeakRssMb: deliveryApiRss,
      cpuMsPerEmail,
      nodemailerCpuMsPerEmail,
      nodemailerPemCpuMsPerEmail,
      pipelineCpuRatio: pipelineCpuRatioBest,
      pipelineCpuRatioBest,
      pipelineCpuRatioPem: pipelineCpuRatio(cpuMsPerEmail, nodemailerPemCpuMsPerEmail),
      postgresPerEmail: meanOf(perEmail.pg),
    };

    // 2b. Prefer: wait: each request holds its connection until its copy is delivered (the worker announces, the API
    // wakes the waiter); 20 connections, against the same sends answered 202 at once in the accept phase
    await settle(env.DATABASE_URL);
    const cpuBefore = cpuMs(api);
    const waited = await load({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: { ...jsonHeaders(tenant.token), Prefer: 'wait=10' }, body: sendBody, connections: 20 });
    results.wait = { ...waited, apiCpuMsPerRequest: +((cpuMs(api) - cpuBefore) / Math.max(1, waited.total2xx + waited.non2xx)).toFixed(2) };
    // the API's high-water mark after each load of this process, to see which one sets the peak
    const apiPeakAfter: Record<string, number> = { delivery: deliveryApiRss, wait: peakRssMb(api) };

    // 3. subscribers: lists without confirmation; lists rotate so the 600-an-hour limit per list is not what is measured
    // (100 lists took 60,000 adds an hour, fewer than 17 s at 3,700 a second: the last ones were refused with 429)
    const lists: string[] = [];
    for (let i = 0; i < 300; i++) {
      const { list } = await admin<{ list: { key: string } }>('/lists', { account: tenant.account, name: `bench ${i}`, confirm: false, mailbox: tenant.mailbox });
      lists.push(list.key);
    }
    let n = 0;
    const addSubscribers: autocannon.Options = {
      url: `http://127.0.0.1:${PORTS.api}`,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/subscribers',
          headers: jsonHeaders(tenant.token),
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ list: lists[n % lists.length], email: `s${n++}@example.com`, name: 'Reader' }) }),
        },
      ],
    };
    await load({ ...addSubscribers, duration: 2 }); // warm-up, as for the accept phase
    await settle(env.DATABASE_URL);
    const subscribers = await load(addSubscribers);
    results.subscribers = subscribers;
    apiPeakAfter.subscribers = peakRssMb(api);

    // 4. prospects: 100 per request into a draft campaign
    const { campaign } = await admin<{ campaign: { id: number } }>('/campaigns', {
      account: tenant.account,
      name: 'bench',
      goal: 'links',
      mailbox: tenant.mailbox,
      steps: [{ subject: 'Hi {{name}}', body: 'Hello', delay_hours: 1 }],
    });
    let p = 0;
    const addProspects: autocannon.Options = {
      url: `http://127.0.0.1:${PORTS.api}`,
      connections: 10,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/prospects',
          headers: jsonHeaders(tenant.token),
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({ campaign: campaign.id, prospects: Array.from({ length: 100 }, () => ({ email: `p${p++}@site${p % 997}.example`, name: 'Pat' })) }),
          }),
        },
      ],
    };
    await load({ ...addProspects, duration: 2 }); // warm-up
    await settle(env.DATABASE_URL);
    const prospects = await load(addProspects);
    results.prospects = { ...prospects, prospectsPerSecond: Math.round((prospects.total2xx * 100) / SECONDS) };
    apiPeakAfter.prospects = peakRssMb(api);
    results.memory = { apiPeakRssMb: Math.max(acceptRss, peakRssMb(api)), workerPeakRssMb: Math.max(workerRss, peakRssMb(worker)), apiPeakAfter: { accept: acceptRss, ...apiPeakAfter } };
    await stop(worker);
    await stop(api);
  }
}

async function cleanup(databases: string[]): Promise<void> {
  const pg = new Client({ connectionString: `${PG_SERVER}/postgres` });
  await pg.connect();
  for (const db of databases) await pg.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  await pg.end();
  const redis = new Redis(REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `msbench:${STAMP}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

function print(r: Record<string, any>): void {
  const rows: [string, string, string][] = !r.accept ? [] : [
    ['accept: POST /api/v1/send, 1 recipient, 50 connections', `${r.accept.api.rps} req/s, p50 ${r.accept.api.p50} ms, p99 ${r.accept.api.p99} ms, ${r.accept.api.errors + r.accept.api.non2xx} errors`, `bare Express ${r.accept.baseline.rps} req/s (p99 ${r.accept.baseline.p99} ms): ratio ${r.accept.ratio} (turns ${r.accept.turns.join(', ')})`],
    ['accept: CPU per request (ms), ours / bare Express', Object.keys(r.accept.cpuMsPerRequest.api).map((k) => `${k} ${r.accept.cpuMsPerRequest.api[k]} / ${r.accept.cpuMsPerRequest.baseline[k]}`).join(', '), ''],
  ];
  if (r.delivery) rows.push(
    [`delivery: ${r.delivery.messages} sends x ${r.delivery.turns} turns, accept to last delivered, 1 worker`, `${r.delivery.perSecond} msg/s`, `nodemailer pool direct, key parsed once ${r.delivery.baselinePerSecond} msg/s: ratioBest ${r.delivery.ratioBest} (target >= 1.0); key as PEM text ${r.delivery.pemPerSecond} msg/s: ratio ${r.delivery.ratioPem}`],
    ['delivery: CPU per email, by process', Object.entries(r.delivery.cpuMsPerEmail as Record<string, number>).map(([k, v]) => `${k} ${v} ms`).join(', '), `nodemailer's own ${r.delivery.nodemailerCpuMsPerEmail} ms (PEM text ${r.delivery.nodemailerPemCpuMsPerEmail} ms): pipeline (API + worker + Postgres + Redis) ratioBest ${r.delivery.pipelineCpuRatioBest} (target <= 1.5), against PEM ${r.delivery.pipelineCpuRatioPem}`],
    ['delivery: Postgres per email (pg_stat_database)', Object.entries(r.delivery.postgresPerEmail as Record<string, number>).map(([k, v]) => `${k} ${v}`).join(', '), ''],
    ['Prefer: wait=10 on POST /api/v1/send, 20 connections, answered once delivered', `${r.wait.rps} req/s, p50 ${r.wait.p50} ms, p99 ${r.wait.p99} ms, ${r.wait.errors + r.wait.non2xx} errors; API CPU ${r.wait.apiCpuMsPerRequest} ms a request`, ''],
    ['subscribers: POST /api/v1/subscribers, 50 connections', `${r.subscribers.rps} req/s, p99 ${r.subscribers.p99} ms, ${r.subscribers.errors + r.subscribers.non2xx} errors`, `${(r.subscribers.rps / r.accept.api.rps).toFixed(2)} of the accept rate (target >= 0.5, p99 < 50 ms)`],
    ['prospects: POST /api/v1/prospects, 100 per request, 10 connections', `${r.prospects.prospectsPerSecond} prospects/s (p99 ${r.prospects.p99} ms)`, ''],
    ['memory: peak RSS', `API ${r.memory.apiPeakRssMb} MB, worker ${r.memory.workerPeakRssMb} MB`, 'target: under 250 MB each'],
  );
  if (r.memory?.trickle) {
    const t = r.memory.trickle;
    const b = r.memory.bigSends;
    rows.push([
      `memory: ${t.connections} unauthenticated clients trickling a 1 MB body`,
      `API peak RSS ${t.apiPeakRssMb} MB; ${t.openAfter5s} connections still open after 5 s, the longest ${t.longestOpenMs} ms; answers ${JSON.stringify(t.answers)}`,
      'target: under 250 MB',
    ]);
    const st = r.memory.strangers;
    if (st) {
      rows.push([
        `hardening: ${st.strangers} strangers trickling 1 MB bodies (unknown route, admin API, wrong key) vs ${st.sends} sends`,
        `answers ${JSON.stringify(st.statuses)}, p50 ${st.p50Ms} ms, p99 ${st.p99Ms} ms`,
        'target: all 202, p99 under 100 ms',
      ]);
    }
    const pp = r.memory.publicPages;
    if (pp) {
      rows.push([
        `hardening: ${pp.strangers} strangers from ${pp.addresses} addresses trickling 16 KB form bodies vs ${pp.signUps.requests} sign-ups and ${pp.unsubscribes.requests} one-click unsubscribes`,
        `sign-ups ${JSON.stringify(pp.signUps.statuses)}, p50 ${pp.signUps.p50Ms} ms, p99 ${pp.signUps.p99Ms} ms; unsubscribes ${JSON.stringify(pp.unsubscribes.statuses)}, p50 ${pp.unsubscribes.p50Ms} ms, p99 ${pp.unsubscribes.p99Ms} ms`,
        'target: all 200, p99 under 100 ms',
      ]);
    }
    const ut = r.memory.unsubscribeTrickle;
    if (ut) {
      for (const [what, u] of [[`${ut.fromAddresses.strangers} strangers from ${ut.fromAddresses.addresses} addresses`, ut.fromAddresses], [`${ut.fromOne64.strangers} strangers from one IPv6 /64`, ut.fromOne64]] as const) {
        rows.push([
          `hardening: ${what} trickling 512-byte bodies at one-click links vs ${u.unsubscribes.requests} one-click unsubscribes`,
          `unsubscribes ${JSON.stringify(u.unsubscribes.statuses)}, p50 ${u.unsubscribes.p50Ms} ms, p99 ${u.unsubscribes.p99Ms} ms`,
          'target: all 200, p99 under 100 ms',
        ]);
      }
    }
    const idle = r.memory.idleFlood;
    if (idle) {
      rows.push([
        `hardening: ${idle.connections} connections from one address that never send a byte`,
        `API sockets open after 1 s ${idle.openAfter1s}, after 8 s ${idle.openAfter8s}; API peak RSS ${idle.apiPeakRssMb} MB`,
        'target: bounded by the per-client cap (256), none after 8 s, under 250 MB',
      ]);
    }
    const rf = r.memory.refusals;
    if (rf) {
      rows.push([
        `memory: ${rf.connections} kept-alive connections sending with an unknown key for ${rf.seconds} s`,
        `${rf.perSecond} refusals/s, answers ${JSON.stringify(rf.statuses)}; API peak RSS ${rf.apiPeakRssMb} MB`,
        'target: under 250 MB',
      ]);
    }
    rows.push([
      `memory: ${b.requests} requests x 50 recipients x ${b.attachmentKb} KB attachment (${b.copies} copies), 1 worker`,
      `API peak RSS ${b.apiPeakRssMb} MB, worker ${b.workerPeakRssMb} MB; delivered in ${b.deliveredSeconds} s; answers ${JSON.stringify(b.statuses)}`,
      'target: under 250 MB each',
    ]);
  }
  if (r.templates) {
    const t = r.templates;
    rows.push([
      `templates: ${t.messages} sends x ${t.turns} turns with a ${Math.round(t.layoutBytes / 1024)} KB layout and ${t.variables} variables, accept to last delivered`,
      `${t.templatePerSecond} msg/s, the same emails plain ${t.plainPerSecond} msg/s: ratio ${t.ratio} (refused or timed out: plain ${t.refused.plain}, template ${t.refused.template})`,
      'target: ratio >= 0.95',
    ]);
  }
  if (r.batch) {
    const b = r.batch;
    rows.push([
      `batch: ${b.messages} messages x ${b.turns} turns, POST /send/batch (100 a request) against POST /send, the API alone`,
      `${b.batchMessagesPerSecond} msg/s in batches, ${b.singlePerSecond} msg/s one by one: ratio ${b.ratio}; p99 ${JSON.stringify(b.p99Ms)} ms (refused: ${JSON.stringify(b.refused)})`,
      'target: ratio >= 0.9',
    ]);
  }
  if (r.growth) {
    const g = r.growth;
    for (const f of g.phases) rows.push([`growth: ${f.name}`, `empty ${f.empty}, grown ${f.grown}: ratio ${f.ratio}`, f.limitMs ? `target: grown under ${f.limitMs} ms` : 'target: ratio >= 0.9']);
    rows.push([
      `growth: broadcast to ${g.broadcast.subscribers.toLocaleString('en')} subscribers (${g.rows.messages.toLocaleString('en')} messages; filled in ${g.rows.fillSeconds} s${g.rows.reused ? ', kept' : ''})`,
      `snapshot ${g.broadcast.snapshotSeconds} s, ${g.broadcast.perSecond} copies/s over the first ${g.broadcast.measured.toLocaleString('en')}, worker peak RSS ${g.broadcast.workerPeakRssMb} MB`,
      'target: worker under 250 MB',
    ]);
    rows.push([
      `growth: segment dry run on ${g.broadcast.subscribers.toLocaleString('en')} subscribers`,
      `country=DE and not clicked: ${g.segment.notClickedSeconds} s (${g.segment.notClickedCount}); country=DE: ${g.segment.fieldSeconds} s (${g.segment.fieldCount})`,
      'target: within 2 s',
    ]);
  }
  if (r.scheduler) {
    const c = r.scheduler;
    rows.push([
      `scheduler: ${c.prospects} due prospects, 200 running campaigns, 50 mailboxes`,
      `claim ${c.tickAllFreeMs} ms a tick with every mailbox free (${c.cpuPerMinuteAllFreeMs} ms a minute), ${c.tickAllInGapMs} ms with every mailbox in its gap; ${c.stepsPerSecond} steps/s written and delivered by 1 worker`,
      `1,200 due on one mailbox with a 60 s gap: ${c.oneGappedMailbox1200.tickMs} ms a tick, ${c.oneGappedMailbox1200.claimed} queued, ${c.oneGappedMailbox1200.cpuPerMinuteMs} ms a minute (before: 4,700-5,300 ms a minute)`,
    ]);
    rows.push([
      `scheduler: sending windows on every campaign (docs/outreach.md)`,
      `claim ${c.windows.tickAllFreeMs} ms a tick with every mailbox free (without windows: ${c.tickAllFreeMs} ms)`,
      `window check of ${c.prospects} prospects in 24 zones: ${c.windows.check100kMs} ms (${c.windows.checkUsPerProspect} µs a prospect)`,
    ]);
    if (c.rotation) {
      rows.push([
        `scheduler: every campaign rotating over 5 of the 50 mailboxes (docs/campaigns.md)`,
        `claim ${c.rotation.tickAllFreeMs} ms a tick before any first step (${c.rotation.claimed} claimed), ${c.rotation.tickHalfStartedMs} ms with half the prospects started from their mailbox`,
        `one mailbox a campaign: ${c.tickAllFreeMs} ms`,
      ]);
    }
    if (c.branches) {
      rows.push([
        `scheduler: every campaign a branched sequence (an email, a condition, two branches: docs/outreach.md)`,
        `claim ${c.branches.tickAllFreeMs} ms a tick before any first step (turns ${c.branches.branchedTurnsMs.join(' / ')}), ${c.branches.tickHalfAtConditionMs} ms with half the prospects at the condition, due`,
        `the linear sequence in the same turns: ${c.branches.linearMs} ms (${c.branches.linearTurnsMs.join(' / ')})`,
      ]);
    }
  }
  if (r.smtp) {
    const m = r.smtp.memory;
    rows.push([`smtp: nodemailer pool (50) submitting ${r.smtp.messagesPerTurn} emails x 3 turns`, `${r.smtp.smtpAcceptsPerSecond} accepts/s`, `same emails to POST /api/v1/send ${r.smtp.apiAcceptsPerSecond}/s: ratio ${r.smtp.ratio} (target >= 0.8)`]);
    rows.push([`smtp: ${m.idleConnections} idle connections, ${m.bigClients} clients sending ${m.bigMessages} 1 MB messages`, `SMTP process peak RSS ${m.smtpPeakRssMb} MB; ${m.bigAccepted} accepted in ${m.bigSeconds} s`, 'target: under 250 MB']);
  }
  if (r.scale) {
    for (const row of r.scale.rows) {
      rows.push([`scale: ${r.scale.messages} sends, sink ${r.scale.sinkDelayMs} ms an email, ${row.workers} worker(s)`, `${row.perSecond} msg/s`, `nodemailer pool of ${row.baselineConnections} connections ${row.baselinePerSecond} msg/s: ratio ${row.ratio}`]);
    }
  }
  if (r.domains) {
    const d = r.domains;
    rows.push([`domains: ${d.domains} sending domains checked against a local dnsmasq (docs/domains.md)`, `${d.seconds} s, ${d.verified} verified`, 'target: under 10 s']);
  }
  if (r.broadcast) {
    const b = r.broadcast;
    rows.push([`broadcast: ${b.subscribers} active subscribers, PATCH to last copy, 1 worker`, `${b.perSecond} msg/s, worker peak RSS ${b.workerPeakRssMb} MB`, `nodemailer pool direct ${b.baselinePerSecond} msg/s: ratio ${b.ratio} (target >= 0.7, RSS < 250 MB)`]);
  }
  console.log(`\n${r.date}  ${r.machine}\n`);
  console.log('| what | figure | baseline |\n|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).message.replace(/^bench: /, '')}`);
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  process.exit(1);
});
