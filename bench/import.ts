/**
 * `npm run bench:import`: an import of IMPORT_LINES (100,000) CSV lines into a list without confirmation, through the
 * compiled API and one worker (each its own process, on a database and Redis prefix of their own, removed at the end).
 * Reported: the upload's time (the API storing the lines), the time until the import is done, lines a second, and the
 * API's and the worker's peak RSS (VmHWM). Targets: done in under 20 s, every process under 250 MB.
 *
 * Then address verification (docs/verification.md): IMPORT_VERIFY_LINES (10,000) prospects' addresses at
 * IMPORT_VERIFY_DOMAINS (500) domains, imported without verification and with `?verify=flag`, the domains' MX answered
 * by Debian's dnsmasq on a loopback port (DNS_SERVERS; nothing leaves the machine, the domain cache starts cold).
 * Target: the import with `flag` done within 2x of the one without. IMPORT_LINES=0 runs the comparison alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import IORedis from 'ioredis';
import { Client } from 'pg';

const ROOT = path.resolve(__dirname, '..');
const LINES = Number(process.env.IMPORT_LINES ?? 100_000);
const VERIFY_LINES = Number(process.env.IMPORT_VERIFY_LINES ?? 10_000);
const VERIFY_DOMAINS = Number(process.env.IMPORT_VERIFY_DOMAINS ?? 500);
const PG_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// NODE_ENV=production takes an admin token of at least 32 random characters
const TOKEN = crypto.randomBytes(24).toString('hex');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function start(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  const file = path.join(ROOT, 'dist', entry);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: run npm run build first (npm run bench:import does)`);
  const child = spawn(process.execPath, [file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

const peakRssMb = (child: ChildProcess) => {
  const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
};

async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** dnsmasq answering an MX for each bench domain (d<n>.bench.test), on a free loopback port. */
async function startDns(dir: string): Promise<{ port: number; stop: () => void }> {
  const port = await freePort();
  const lines = ['local=/bench.test/', 'host-record=mx.bench.test,127.0.0.1', ...Array.from({ length: VERIFY_DOMAINS }, (_, i) => `mx-host=d${i}.bench.test,mx.bench.test,10`)];
  fs.writeFileSync(path.join(dir, 'dnsmasq.conf'), lines.join('\n') + '\n');
  const dnsmasq = spawn('/usr/sbin/dnsmasq', ['--no-daemon', `--port=${port}`, '--listen-address=127.0.0.1', '--bind-interfaces', '--no-resolv', '--no-hosts', '--pid-file=', `--conf-file=${path.join(dir, 'dnsmasq.conf')}`], { stdio: 'ignore' });
  // dnsmasq binds at once; a moment for it to read its lines
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (dnsmasq.exitCode !== null) throw new Error('dnsmasq did not start');
  return { port, stop: () => dnsmasq.kill('SIGTERM') };
}

async function main(): Promise<void> {
  const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
  const database = `ms_bench_import_${run}`;
  const prefix = `bench-import-${run}`;
  const port = await freePort();
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-import-'));
  const dns = await startDns(stateDir);
  const env = {
    PORT: String(port),
    DATABASE_URL: `${PG_SERVER}/${database}`,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    ADMIN_TOKEN: TOKEN,
    SECRET_KEY: '0'.repeat(64),
    STATE_DIR: stateDir,
    DNS_SERVERS: `127.0.0.1:${dns.port}`,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  };
  const api = start('apps/api/src/server.js', env);
  const base = `http://127.0.0.1:${port}`;
  let worker: ChildProcess | undefined;
  try {
    await until(async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined), 60_000, 'the API');
    worker = start('apps/worker/src/main.js', env);
    const admin = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${base}/admin/api${route}`, {
        method,
        headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const answer = (await res.json()) as Record<string, { id: number } & Record<string, unknown>>;
      if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const account = (await admin('POST', '/accounts', { name: 'bench' })).account!.id;
    const mailbox = (await admin('POST', '/mailboxes', { account, address: 'bench@example.com', smtp: 'smtp://127.0.0.1:9' })).mailbox!.id;
    const newList = async (name: string) => (await admin('POST', '/lists', { account, mailbox, name, confirm: false })).list!.id;
    type Done = { status: string; added: number; total: number; verification: Record<string, number> };
    /** Uploads the CSV and waits for the import to finish: the view, the upload's and the whole import's seconds. */
    const importCsv = async (list: number, csv: string, query = '') => {
      const t0 = performance.now();
      const res = await fetch(`${base}/admin/api/lists/${list}/import${query}`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'text/csv' }, body: csv });
      const accepted = (await res.json()) as { import: { id: number } };
      if (res.status !== 202) throw new Error(`import: ${res.status} ${JSON.stringify(accepted)}`);
      const uploadSeconds = (performance.now() - t0) / 1000;
      const done = await until(
        async () => {
          const view = (await admin('GET', `/imports/${accepted.import.id}`)).import as unknown as Done;
          return view.status === 'done' || view.status === 'failed' ? view : undefined;
        },
        300_000,
        'the import',
      );
      return { done, uploadSeconds, seconds: (performance.now() - t0) / 1000 };
    };

    if (LINES > 0) {
      const csv = ['email,name,tags', ...Array.from({ length: LINES }, (_, i) => `person${i}@example.com,Person ${i},bench;n${i % 10}`)].join('\n') + '\n';
      const { done, uploadSeconds, seconds } = await importCsv(await newList('bench'), csv);
      const figures = {
        lines: LINES,
        status: done.status,
        added: done.added,
        uploadSeconds: +uploadSeconds.toFixed(2),
        doneSeconds: +seconds.toFixed(2),
        linesPerSecond: Math.round(LINES / seconds),
        apiPeakRssMb: peakRssMb(api),
        workerPeakRssMb: peakRssMb(worker),
      };
      console.log(JSON.stringify(figures, null, 2));
      if (done.status !== 'done' || done.added !== LINES) process.exitCode = 1;
    }

    if (VERIFY_LINES > 0) {
      // prospects as a list of leads: a person at one of a few hundred companies, one in twenty a role address
      const lead = (i: number) => `${i % 20 === 0 ? `info+${i}` : `lead${i}`}@d${i % VERIFY_DOMAINS}.bench.test`;
      const csv = ['email,name', ...Array.from({ length: VERIFY_LINES }, (_, i) => `${lead(i)},Lead ${i}`)].join('\n') + '\n';
      // a first import warms the worker and Postgres (otherwise whichever import runs first pays for it); not measured
      await importCsv(await newList('warm-up'), ['email', ...Array.from({ length: 2_000 }, (_, i) => `warm${i}@example.com`)].join('\n') + '\n');
      const plain = await importCsv(await newList('plain'), csv);
      const flagged = await importCsv(await newList('flag'), csv, '?verify=flag');
      const comparison = {
        verifyLines: VERIFY_LINES,
        domains: VERIFY_DOMAINS,
        withoutSeconds: +plain.seconds.toFixed(2),
        flagSeconds: +flagged.seconds.toFixed(2),
        ratio: +(flagged.seconds / plain.seconds).toFixed(2),
        verification: flagged.done.verification,
        target: 'ratio <= 2',
      };
      console.log(JSON.stringify(comparison, null, 2));
      if (plain.done.added !== VERIFY_LINES || flagged.done.added !== VERIFY_LINES || comparison.ratio > 2) process.exitCode = 1;
    }
  } finally {
    dns.stop();
    for (const child of [api, worker]) child?.kill('SIGTERM');
    await Promise.all([api, worker].map((c) => c && c.exitCode === null && new Promise((resolve) => c.once('exit', resolve))));
    const pg = new Client({ connectionString: `${PG_SERVER}/postgres` });
    await pg.connect();
    await pg.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await pg.end();
    const redis = new IORedis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
}

main().catch((err: Error) => {
  console.error(`bench:import: ${err.message}`);
  process.exit(1);
});
