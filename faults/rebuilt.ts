/**
 * The fault suite's scenarios where what Redis or a process held is lost and must be rebuilt from the rows: webhook
 * retries, a scheduled broadcast, delivery marks through an outage longer than the lease, Idempotency-Keys through an
 * outage and an API killed mid-load.
 */
import http from 'node:http';
import type net from 'node:net';
import { Client } from 'pg';
import { log, pick, seconds, sleep, until } from './kit';
import { freePort } from '../test/helpers/processes';
import { accepted, deliveredCount, delivery, drained, load, sendingIds, sendUntilAnswered, statusCounts, summarizeAnswers, summarizeStatuses } from './load';
import { keptMarks } from './outages';
import { startNode, stopService, type Service } from './services';
import type { Scenario } from './world';

/** The outage of `postgres-longer-than-lease`: past the lease (30 s), the reconciler's grace (5 s) and a tick. */
const LONG_OUTAGE_MS = 45_000;

/** A webhook endpoint on loopback: answers 500 while `failing`, then 200; counts attempts and 2xx answers by event. */
async function webhookReceiver() {
  const state = {
    failing: true,
    events: new Set<string>(),
    attempts: new Map<string, number>(),
    delivered: new Set<string>(),
    deliveredTimes: new Map<string, number>(),
  };
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

export function rebuiltScenarios(): Record<string, Scenario> {
  /** `postgres-longer-than-lease`'s slow sink, stopped at its teardown */
  let slowSink: Service | undefined;
  return {
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
  };
}
