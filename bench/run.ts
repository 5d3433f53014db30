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
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { growthPhase } from './growth';
import { KEPT_DATABASE } from './growth-rows';
import { memoryPhase, PUBLIC_REQUESTS } from './memory';
import { scalePhase } from './scale';
import { domainsPhase } from './domains';
import { schedulerPhase } from './scheduler';
import { templatesPhase } from './templates';
import { batchPhase } from './batch';
import { smtpPhase } from './smtp';
import { mxPhase } from './mx';
import { broadcastPhase } from './broadcast';
import { mainPhases } from './main-phase';
import { print } from './print';
import { children, peakRssMb, start, stop } from './processes';
import { admin, jsonHeaders, makeTenant, resetSink, sendBody, settle, sinkCount, until, up } from './service';
import { ADMIN_TOKEN, CONNECTIONS, MESSAGES, ONLY, PG_SERVER, PORTS, REDIS_URL, SECONDS, SECRET_KEY, STAMP } from './settings';
import { DELIVERY_TURNS } from './turns';

async function main(): Promise<void> {
  // this process's own imports of apps/core (the scheduler's claims, the memory phase's unsubscribe links) read config()
  // once, whichever comes first: they sign with the services' key only if it is set before any of them
  Object.assign(process.env, { SECRET_KEY, ADMIN_TOKEN });
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
    if (!ONLY || ONLY === 'main' || ONLY === 'accept' || ONLY === 'delivery') await mainPhases(results, serviceEnv, sink);
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
        resetSink,
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
    resetSink,
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
  // the links their emails would carry, made as the worker makes them (subscriber-links/unsubscribe.ts), under the service's SECRET_KEY
  const { unsubscribeToken } = await import('../apps/core/src/subscriber-links/unsubscribe');
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
    resetSink,
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

main().catch((err) => {
  console.error(`bench: ${(err as Error).message.replace(/^bench: /, '')}`);
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  process.exit(1);
});
