/**
 * The fault suite's scenarios on production topologies (docs/deploy.md): Postgres behind PgBouncer in transaction
 * mode, Redis as a Cluster of 3 primaries, Redis under Sentinel with its primary killed. Each starts its own servers
 * from Debian's packages (pgbouncer, redis-server, redis-sentinel), installing those missing with apt-get when run as
 * root, and points the world's processes at them before they start (`setup`). Used by faults/run.ts.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { dbsize, ensurePackages, keysOff, killAll, redisCommand, startPgBouncer, startServer, workerLogs } from './topology-servers';
import { pick, seconds, type Kit, type TopologyScenario, type WorldLike } from './kit';
import { webhookReceiver, webhookWorkload } from './webhooks';

export function topologyScenarios<W extends WorldLike, A, D>(kit: Kit<W, A, D>): Record<string, TopologyScenario<W>> {
  const servers: ChildProcess[] = [];
  let hooks: Awaited<ReturnType<typeof webhookReceiver>> | undefined;
  let primaryProcess: ChildProcess | undefined;
  let sentinelPorts: number[] = [];
  let clusterPorts: number[] = [];
  let replicaPort = 0;
  const teardown = async () => {
    await killAll(servers.splice(0));
  };

  return {
    /**
     * Postgres through PgBouncer (pool_mode = transaction, 1.18: no named prepared statements kept), migrations over
     * DIRECT_DATABASE_URL; two workers drain the sends; the advisory lock housekeeping takes is checked through the pooler.
     */
    pgbouncer: {
      apis: 1,
      workers: 2,
      teardown,
      setup: (world) => startPgBouncer(kit, world, servers),
      async run(world) {
        const startedAt = Date.now();
        const answers = await kit.load(world, kit.sends);
        const ids = kit.accepted(answers);
        const ms = await kit.drained(world.sink, ids, 180_000);
        await kit.sleep(3_000);
        const d = await kit.delivery(world.sink, ids);
        // the lock housekeeping takes (a transaction's advisory lock): exclusive through the pooler
        const [a, b] = [new Client({ connectionString: world.env.DATABASE_URL }), new Client({ connectionString: world.env.DATABASE_URL })];
        await a.connect();
        await b.connect();
        let lockExclusive = false;
        try {
          await a.query('BEGIN');
          await b.query('BEGIN');
          const first = (await a.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          const second = (await b.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          await a.query('COMMIT');
          const afterCommit = (await b.query<{ t: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('housekeeping:faults')) AS t")).rows[0]!.t;
          await b.query('COMMIT');
          lockExclusive = first && !second && afterCommit;
        } finally {
          await a.end();
          await b.end();
        }
        const preparedErrors = workerLogs(kit, world, 'prepared statement');
        const housekeepingFailures = workerLogs(kit, world, 'housekeeping task failed');
        return {
          ...pick(d),
          drainSeconds: seconds(ms === null ? null : Date.now() - startedAt - 3_000),
          duringFault: { answers: kit.summarizeAnswers(answers), lockExclusiveThroughPooler: lockExclusive, preparedStatementErrors: preparedErrors.length, housekeepingFailures: housekeepingFailures.length },
          target: 'exactly once by 2 workers through PgBouncer (transaction mode); the housekeeping lock exclusive; no housekeeping failure',
          met: d.duplicates === 0 && d.lost === 0 && d.accepted === kit.sends && lockExclusive && preparedErrors.length === 0 && housekeepingFailures.length === 0,
        };
      },
    },

    /**
     * Redis as a Cluster of 3 primaries (queues under one hash tag): sends, a broadcast to a list, and a webhook for
     * every message.sent, each delivered exactly once.
     */
    'redis-cluster': {
      apis: 1,
      workers: 2,
      teardown: async () => {
        await teardown();
        await hooks?.close();
      },
      async setup(world) {
        ensurePackages({ 'redis-server': 'redis-server', 'redis-cli': 'redis-tools' });
        const dir = path.join(kit.tmp, 'cluster');
        fs.mkdirSync(dir, { recursive: true });
        const ports: number[] = [];
        for (let i = 0; i < 3; i++) {
          const port = await kit.freePort();
          const bus = await kit.freePort();
          ports.push(port);
          servers.push(
            startServer('redis-server', [
              '--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
              '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no', '--dir', dir,
            ]),
          );
        }
        for (const port of ports) await kit.until(async () => (await redisCommand(port, 'PING')).startsWith('+PONG'), 10_000, `redis ${port}`);
        execFileSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
        for (const port of ports) await kit.until(async () => (await redisCommand(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), 30_000, `cluster state on ${port}`);
        clusterPorts = ports;
        world.env.REDIS_CLUSTER_NODES = ports.map((p) => `127.0.0.1:${p}`).join(',');
        hooks = await webhookReceiver();
        kit.log(`redis cluster of 3 primaries on ${ports.join(', ')}`);
      },
      async run(world) {
        const outcome = await webhookWorkload(kit, world, hooks!, 1);
        const keysPerNode = await Promise.all(clusterPorts.map(dbsize));
        const keysOnRedisUrl = await keysOff(world);
        return {
          ...outcome,
          duringFault: { ...outcome.duringFault, keysPerNode, keysOnRedisUrl },
          target: 'sends, a broadcast and webhooks each exactly once on a 3-primary Redis Cluster',
          met: outcome.met && keysPerNode.some((n) => n > 0) && keysOnRedisUrl === 0,
        };
      },
    },

    /**
     * Redis under Sentinel (a primary, a replica, 3 sentinels): the primary SIGKILLed mid-drain; the sentinels promote
     * the replica and the service follows without a restart. What the replica had not received yet comes back from
     * Postgres (the reconciler).
     */
    'sentinel-failover': {
      apis: 1,
      workers: 1,
      drainFirst: true,
      teardown,
      async setup(world) {
        ensurePackages({ 'redis-server': 'redis-server', 'redis-sentinel': 'redis-sentinel' });
        const dir = path.join(kit.tmp, 'sentinel');
        fs.mkdirSync(dir, { recursive: true });
        const primary = await kit.freePort();
        const replica = await kit.freePort();
        const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
        primaryProcess = startServer('redis-server', ['--port', String(primary), ...common]);
        servers.push(primaryProcess);
        servers.push(startServer('redis-server', ['--port', String(replica), '--replicaof', '127.0.0.1', String(primary), ...common]));
        for (const port of [primary, replica]) await kit.until(async () => (await redisCommand(port, 'PING')).startsWith('+PONG'), 10_000, `redis ${port}`);
        await kit.until(async () => (await redisCommand(replica, 'INFO', 'replication')).includes('master_link_status:up'), 30_000, 'the replica in sync');
        sentinelPorts = [];
        for (let i = 0; i < 3; i++) {
          const port = await kit.freePort();
          const conf = path.join(dir, `sentinel-${port}.conf`);
          fs.writeFileSync(
            conf,
            [
              `port ${port}`,
              'bind 127.0.0.1',
              `dir ${dir}`,
              `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary} 2`,
              `sentinel down-after-milliseconds ${SENTINEL_NAME} 2000`,
              `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
              `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
              '',
            ].join('\n'),
          );
          servers.push(startServer('redis-sentinel', [conf]));
          sentinelPorts.push(port);
        }
        for (const port of sentinelPorts) {
          await kit.until(async () => (await redisCommand(port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)).includes(String(primary)), 10_000, `sentinel ${port}`);
        }
        Object.assign(world.env, { REDIS_SENTINELS: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','), REDIS_SENTINEL_NAME: SENTINEL_NAME });
        replicaPort = replica;
        kit.log(`redis primary :${primary}, replica :${replica}, sentinels ${sentinelPorts.join(', ')}`);
      },
      async run(world) {
        const answers = await kit.load(world, kit.sends);
        const ids = kit.accepted(answers);
        for (let i = 0; i < world.workerCount; i++) world.startWorker();
        await kit.until(async () => (await kit.deliveredCount(world.sink)) >= Math.min(500, ids.length / 4), 60_000, 'the first deliveries', 20);
        const atKill = await kit.deliveredCount(world.sink);
        await killAll([primaryProcess!]);
        const killedAt = Date.now();
        kit.log('redis primary SIGKILLed at', atKill, 'delivered');
        await kit.until(
          async () => (await redisCommand(sentinelPorts[0]!, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)).includes(String(replicaPort)),
          60_000,
          'the promotion',
          100,
        );
        const promotedAt = Date.now();
        kit.log('replica promoted after', promotedAt - killedAt, 'ms');
        const ms = await kit.drained(world.sink, ids, 120_000);
        await kit.sleep(3_000);
        const d = await kit.delivery(world.sink, ids);
        const keysOnPromoted = await dbsize(replicaPort);
        const keysOnRedisUrl = await keysOff(world);
        const restarted = [...world.apis.map((a) => a.service), ...world.workers].filter((s) => s.child.exitCode !== null || s.child.signalCode !== null).length;
        return {
          ...pick(d),
          drainSeconds: seconds(ms),
          duringFault: {
            deliveredAtKill: atKill,
            promotionSeconds: seconds(promotedAt - killedAt),
            drainedAfterPromotionSeconds: seconds(ms),
            processesExited: restarted,
            keysOnPromoted,
            keysOnRedisUrl,
            answers: kit.summarizeAnswers(answers),
          },
          target: '0 lost, drained within 60 s of the promotion, no service restart',
          met: d.lost === 0 && ms !== null && ms <= 60_000 && restarted === 0 && keysOnPromoted > 0 && keysOnRedisUrl === 0,
        };
      },
    },
  };
}

const SENTINEL_NAME = 'msprimary';
