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
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drainScenarios } from './drain';
import { rebuiltScenarios } from './rebuilt';
import { topologyScenarios } from './topologies';
import { serversLeftRunning } from './topology-servers';
import { webhookScenarios } from './webhooks';
import { smtpScenarios } from './smtp';
import { lifecycleScenarios } from './lifecycle';
import { inboundScenarios } from './inbound';
import { outageScenarios } from './outages';
import { oauthScenarios } from './oauth';
import { failoverScenarios, formationsLeftRunning } from './pg-failover';
import { log, sleep, until, type Result } from './kit';
import { freePort } from '../test/helpers/processes';
import { accepted, deliveredCount, delivery, drained, load, SENDS, summarizeAnswers } from './load';
import { quietLogs, stackFrames } from './logs';
import { asRoot, OwnPostgres, OwnRedis, tmp } from './own-servers';
import { children, LOGS, logFiles, startNode, stopService } from './services';
import { World, type Scenario, type Sink } from './world';

const ROOT = path.resolve(__dirname, '..');
const ONLY = process.env.FAULTS_ONLY?.split(',').filter(Boolean);

/** The run's own Postgres and Redis, once main made them (cleaned up on any exit). */
let ownServers: { pg: OwnPostgres; redis: OwnRedis } | undefined;

// PgBouncer, Redis Cluster, Redis Sentinel: servers of their own (faults/topologies.ts); the webhook workload with no
// fault (faults/webhooks.ts)
const kit = {
  tmp, asRoot, pgPort: () => ownServers!.pg.port, freePort, until, sleep, log, load, accepted, drained, delivery, deliveredCount, summarizeAnswers, sends: SENDS, logsDir: LOGS,
};
const scenarios: Record<string, Scenario> = {
  ...drainScenarios,
  ...rebuiltScenarios(),
  ...topologyScenarios(kit),
  ...webhookScenarios(kit),
  ...lifecycleScenarios(kit),
  // SMTP submission: Postgres away under submitting clients, the SMTP process killed mid-DATA (faults/smtp.ts)
  ...smtpScenarios({ ...kit, startNode, stopService }),
  // replies read while the worker is SIGKILLed and Redis lost: one message.received each (faults/inbound.ts)
  ...inboundScenarios(kit),
  // Postgres stopped behind PgBouncer under sends (faults/outages.ts)
  ...outageScenarios(kit),
  // an OAuth2 mailbox's token endpoint answering 500 for a minute under sends (faults/oauth.ts)
  ...oauthScenarios({ ...kit, startNode, stopService }),
  // the primary of a pg_auto_failover formation SIGKILLed under sends (faults/pg-failover.ts)
  ...failoverScenarios(kit),
};

/** Processes the run started that still live once it is done (its services, its Redis, the topology servers). */
function leftRunning(): string[] {
  const left = [...children].filter((c) => c.exitCode === null && c.signalCode === null).map((c) => `pid ${c.pid} (${c.spawnargs.slice(0, 2).join(' ')})`);
  for (const group of [...serversLeftRunning(), ...formationsLeftRunning()]) left.push(`process group ${group}`);
  if (ownServers && fs.existsSync(path.join(ownServers.pg.dir, 'postmaster.pid'))) left.push('postgres');
  return left;
}

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
