/**
 * The fault suite's outage scenarios of reliability round 4: Postgres stopped behind PgBouncer under sends, and the
 * answers during it (503 with Retry-After within a second, marks kept, nothing sent twice). Used by faults/run.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { seconds, type Kit, type WorldLike } from './kit';
import { startPgBouncer, stopServers } from './topology-servers';

/** What these scenarios need of run.ts's world beyond the topologies': its Postgres to stop and start, the key. */
export interface OutageWorld extends WorldLike {
  pg: { stop: () => void; start: () => void };
  redis: { kill(): Promise<void>; start(): Promise<void>; signal(signal: 'SIGSTOP' | 'SIGCONT'): void };
  token: string;
  account: number;
  mailbox: number;
  admin<T>(p: string, body: unknown, method?: string): Promise<T>;
}

/** One call of the API as a client makes it: its status, Retry-After and time. */
async function call(world: OutageWorld, path: string, method: string, body: unknown, form = false): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${world.apis[0]!.port}${path}`, {
      method,
      headers: form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : { Authorization: `Bearer ${world.token}`, 'Content-Type': 'application/json' },
      body: form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    const ids = res.status === 202 ? ((JSON.parse(text) as { messages?: { id: string }[] }).messages ?? []).map((m) => m.id) : [];
    return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.get('retry-after'), ids };
  } catch {
    return { status: 0, ms: performance.now() - started, retryAfter: null, ids: [] };
  }
}

/**
 * Every write path of the API while Redis is hung or dead: 20 subscriber adds and 20 hosted-form posts (Redis decides:
 * 503 with Retry-After), 10 cancels and 10 reschedules of sends made before (200), 50 sends (202), all delivered once
 * Redis is back.
 */
async function writesWithoutRedis<W extends OutageWorld, A extends Answer, D>(kit: Kit<W, A, D>, world: W, fault: () => Promise<void>, recover: () => Promise<void>) {
  // the worker up first (it stops at start when Redis is not there): one send through it
  await kit.load(world, 1, 0, 1);
  await kit.until(async () => (await kit.deliveredCount(world.sink)) >= 1, 60_000, 'the worker up');
  const { list } = await world.admin<{ list: { key: string } }>('/lists', { account: world.account, name: 'faults', confirm: false, mailbox: world.mailbox });
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const scheduled: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`http://127.0.0.1:${world.apis[0]!.port}/api/v1/send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${world.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ to: `later${i}@example.org`, subject: `Later ${i}`, text: 'x', send_at: later }),
    });
    scheduled.push(((await res.json()) as { id: string }).id);
  }
  await fault();
  // each kind of write by 5 clients at a time, as the sends during postgres-stopped
  const kinds: Record<string, (() => Promise<Answer>)[]> = {
    subscriber: Array.from({ length: 20 }, (_, i) => () => call(world, '/api/v1/subscribers', 'POST', { list: list.key, email: `person${i}@example.org` })),
    form: Array.from({ length: 20 }, (_, i) => () => call(world, `/f/${list.key}`, 'POST', { email: `form${i}@example.org`, name: 'Form' }, true)),
    cancel: scheduled.slice(0, 10).map((id) => () => call(world, `/api/v1/send/${id}/cancel`, 'POST', {})),
    reschedule: scheduled.slice(10).map((id) => () => call(world, `/api/v1/send/${id}`, 'PATCH', { send_at: new Date(Date.now() + 7_200_000).toISOString() })),
    send: Array.from({ length: 50 }, (_, i) => () => call(world, '/api/v1/send', 'POST', { to: `now${i}@example.org`, subject: `Now ${i}`, text: 'x' })),
  };
  const answers: Record<string, Answer[]> = {};
  for (const [kind, calls] of Object.entries(kinds)) {
    const done: Answer[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: 5 }, async () => {
      while (next < calls.length) done.push(await calls[next++]!());
    }));
    answers[kind] = done;
  }
  await recover();
  const ids = answers.send!.flatMap((a) => a.ids);
  await kit.drained(world.sink, ids, 120_000);
  await kit.sleep(3_000);
  const d = (await kit.delivery(world.sink, ids)) as unknown as { accepted: number; delivered: number; duplicates: number; lost: number };
  const summaries = Object.fromEntries(Object.entries(answers).map(([k, v]) => [k, summarizeAll(v)]));
  const refusedWell = ['subscriber', 'form'].every((k) => summaries[k]!.statuses['503'] === 20 && summaries[k]!.retryAfter503.every((r) => r !== null));
  const inTime = Object.values(summaries).every((s) => answeredWell(s, 1_000));
  const done = ['cancel', 'reschedule'].every((k) => summaries[k]!.statuses['200'] === 10);
  return {
    accepted: d.accepted,
    delivered: d.delivered,
    duplicates: d.duplicates,
    lost: d.lost,
    drainSeconds: null,
    duringFault: summaries,
    target: 'every answer within 1 s: subscriber adds and form posts 503 with Retry-After, cancels and reschedules 200, sends 202 and delivered once after',
    met: refusedWell && inTime && done && (summaries.send!.statuses['202'] ?? 0) === 50 && d.lost === 0 && d.duplicates === 0,
  };
}

function summarizeAll(answers: Answer[]): Summary {
  const statuses: Record<string, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  return { requests: answers.length, statuses, maxMs: Math.round(Math.max(...answers.map((a) => a.ms))), retryAfter503: [...new Set(answers.filter((a) => a.status === 503).map((a) => a.retryAfter))] };
}

interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
  ids: string[];
}

interface Summary {
  requests: number;
  statuses: Record<string, number>;
  maxMs: number | null;
  retryAfter503: (string | null)[];
}

/** Every answer in time (within `ms`), each a success or a 503 with Retry-After. */
function answeredWell(summary: Summary, ms: number): boolean {
  const others = Object.keys(summary.statuses).filter((s) => !['200', '202', '503'].includes(s));
  return others.length === 0 && (summary.maxMs ?? Infinity) <= ms && summary.retryAfter503.every((r) => r !== null);
}

/**
 * The "sent" marks kept through a Postgres outage: rows the sink received before Postgres was back (`back`, epoch ms)
 * whose mark was written after it (the worker logs them at debug only, so they are counted from the rows).
 */
export async function keptMarks(url: string, received: Map<string, number[]>, back: number): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(`SELECT id::text FROM messages WHERE status = 'sent' AND sent_at >= to_timestamp($1::float8 / 1000)`, [back]);
    return rows.filter((r) => (received.get(r.id)?.[0] ?? Infinity) < back).length;
  } finally {
    await client.end();
  }
}

/** What Postgres says of rows the sink never received, grouped (a lost row's status, holder and lease tell why). */
async function rowsOf(url: string, ids: string[]): Promise<Record<string, unknown>[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT status::text, locked_by, (locked_until < now()) AS lease_ran_out, attempts, (enqueued_at IS NOT NULL) AS enqueued, count(*)::int AS n,
              min(extract(epoch FROM now() - updated_at))::int AS updated_seconds_ago
       FROM messages WHERE id = ANY($1::uuid[]) GROUP BY 1, 2, 3, 4, 5`,
      [ids],
    );
    return rows;
  } finally {
    await client.end();
  }
}

export function outageScenarios<W extends OutageWorld, A extends Answer, D extends { received: Map<string, number[]>; duplicateIds: string[] }>(kit: Kit<W, A, D>) {
  const servers: ChildProcess[] = [];
  const summarize = (answers: A[]) => kit.summarizeAnswers(answers) as Summary;

  return {
    /** Redis SIGSTOPped 15 s under every write path; SIGCONT after. */
    'redis-hung': {
      apis: 1,
      workers: 1,
      run: (world: W) =>
        writesWithoutRedis(kit, world, async () => world.redis.signal('SIGSTOP'), async () => {
          await kit.sleep(5_000);
          world.redis.signal('SIGCONT');
        }),
    },
    /** Redis SIGKILLed under every write path; restarted empty after. */
    'redis-dead-writes': {
      apis: 1,
      workers: 1,
      run: (world: W) => writesWithoutRedis(kit, world, () => world.redis.kill(), () => world.redis.start()),
    },

    /**
     * Postgres stopped 20 s behind PgBouncer (transaction mode) in the middle of a 2,000 drain by 2 workers, 100 sends
     * made meanwhile: PgBouncer says 08P01 for all of it, which must read as Postgres away (marks kept, 503s).
     */
    'pgbouncer-outage': {
      apis: 1,
      workers: 2,
      drainFirst: true,
      setup: (world: W) => startPgBouncer(kit, world, servers, { loginRetrySeconds: null }),
      teardown: () => stopServers(servers.splice(0)),
      async run(world: W) {
        const answers = await kit.load(world, kit.sends);
        const ids = kit.accepted(answers);
        for (let i = 0; i < world.workerCount; i++) world.startWorker();
        await kit.until(async () => (await kit.deliveredCount(world.sink)) >= 300, 60_000, 'the first deliveries', 20);
        world.pg.stop();
        const stoppedAt = Date.now();
        kit.log('postgres stopped behind pgbouncer at', await kit.deliveredCount(world.sink), 'delivered');
        const during = await kit.load(world, 100, kit.sends, 5);
        await kit.sleep(Math.max(0, 20_000 - (Date.now() - stoppedAt)));
        world.pg.start();
        const back = Date.now();
        kit.log('postgres back after', Math.round((back - stoppedAt) / 1000), 's');
        const ms = await kit.drained(world.sink, ids, 240_000);
        // a mark dropped in the outage shows as a second copy once the lease (30 s), the grace and a reconcile passed
        await kit.sleep(Math.max(0, back + 45_000 - Date.now()));
        const d = await kit.delivery(world.sink, ids);
        const outage = summarize(during);
        const kept = await keptMarks(world.env.DIRECT_DATABASE_URL!, d.received, back);
        const lostRows = d.lost ? await rowsOf(world.env.DIRECT_DATABASE_URL!, ids.filter((id) => !d.received.has(id))) : [];
        // each copy of a duplicate, in ms from Postgres's return (negative: before it)
        const copies = d.duplicateIds.map((id) => d.received.get(id)!.map((t) => t - back));
        return {
          accepted: d.accepted,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: seconds(ms),
          duringFault: { sendsWhilePostgresDown: outage, sentMarksKeptThroughTheOutage: kept, duplicateCopiesMsFromReturn: copies, ...(d.lost ? { lostRows } : {}) },
          target: '0 duplicates, 0 lost; every send during the outage 503 with Retry-After within 1 s',
          met: d.duplicates === 0 && d.lost === 0 && d.accepted === kit.sends && (outage.statuses['503'] ?? 0) === during.length && answeredWell(outage, 1_000),
        };
      },
    },
  };
}
