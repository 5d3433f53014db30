/**
 * The fault suite's outage scenarios of reliability round 4: Postgres stopped behind PgBouncer under sends, and the
 * answers during it (503 with Retry-After within a second, marks kept, nothing sent twice). Used by faults/run.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { startPgBouncer, stopServers, type Kit, type WorldLike } from './topologies';

/** What these scenarios need of run.ts's world beyond the topologies': its Postgres to stop and start, the key. */
export interface OutageWorld extends WorldLike {
  pg: { stop: () => void; start: () => void };
  token: string;
}

interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
}

interface Summary {
  requests: number;
  statuses: Record<string, number>;
  maxMs: number | null;
  retryAfter503: (string | null)[];
}

const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms / 100) / 10);

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

export function outageScenarios<W extends OutageWorld, A extends Answer, D extends { received: Map<string, number[]>; duplicateIds: string[] }>(kit: Kit<W, A, D>) {
  const servers: ChildProcess[] = [];
  const summarize = (answers: A[]) => kit.summarizeAnswers(answers) as Summary;

  return {
    /**
     * Postgres stopped 20 s behind PgBouncer (transaction mode) in the middle of a 2,000 drain by 2 workers, 100 sends
     * made meanwhile: PgBouncer says 08P01 for all of it, which must read as Postgres away (marks kept, 503s).
     */
    'pgbouncer-outage': {
      apis: 1,
      workers: 2,
      drainFirst: true,
      setup: (world: W) => startPgBouncer(kit, world, servers),
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
        // each copy of a duplicate, in ms from Postgres's return (negative: before it)
        const copies = d.duplicateIds.map((id) => d.received.get(id)!.map((t) => t - back));
        return {
          accepted: d.accepted,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: seconds(ms),
          duringFault: { sendsWhilePostgresDown: outage, sentMarksKeptThroughTheOutage: kept, duplicateCopiesMsFromReturn: copies },
          target: '0 duplicates, 0 lost; every send during the outage 503 with Retry-After within 1 s',
          met: d.duplicates === 0 && d.lost === 0 && d.accepted === kit.sends && (outage.statuses['503'] ?? 0) === during.length && answeredWell(outage, 1_000),
        };
      },
    },
  };
}
