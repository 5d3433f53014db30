/**
 * The fault suite's lifecycle scenario (faults/run.ts): a list's two-step welcome series with Redis lost empty between
 * the steps. The series lives in Postgres (series_runs), so every subscriber must get both steps, each once.
 */
import { Client } from 'pg';
import type { Kit, WorldLike } from './kit';

export interface LifecycleWorld extends WorldLike {
  redis: { kill(): Promise<void>; start(): Promise<void> };
  token: string;
  account: number;
  mailbox: number;
  admin<T>(p: string, body: unknown, method?: string): Promise<T>;
}

const PEOPLE = 200;
/** step 2 comes 18 s after step 1: Redis is lost and back (empty) in between */
const STEP_TWO_HOURS = 0.005;

async function rows<T>(world: WorldLike, text: string, values: unknown[]): Promise<T[]> {
  const client = new Client({ connectionString: world.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

export function lifecycleScenarios<W extends LifecycleWorld, A, D>(kit: Kit<W, A, D>) {
  return {
    /** 200 people join a list with a welcome series; Redis is killed after step 1 and comes back empty before step 2. */
    'series-redis-lost': {
      apis: 1,
      workers: 1,
      async run(world: W) {
        // the worker is up (it stops at start when Redis is not there): one send through it first
        await kit.load(world, 1, 0, 1);
        await kit.until(async () => (await kit.deliveredCount(world.sink)) >= 1, 60_000, 'the worker up');
        await fetch(`http://127.0.0.1:${world.sink.httpPort}/reset`, { method: 'POST' });
        const { list } = await world.admin<{ list: { id: number; key: string } }>('/lists', {
          account: world.account,
          name: 'welcome',
          confirm: false,
          mailbox: world.mailbox,
          steps: [
            { subject: 'Welcome, {{name}}', text: 'Hello {{name}}. Leave any time: {{unsubscribe_url}}', delay_hours: 0 },
            { subject: 'Day two', text: 'More for {{name}}', delay_hours: STEP_TWO_HOURS },
          ],
        });
        const port = world.apis[0]!.port;
        for (let i = 0; i < PEOPLE; i += 10) {
          await Promise.all(
            Array.from({ length: 10 }, (_, j) =>
              fetch(`http://127.0.0.1:${port}/api/v1/subscribers`, {
                method: 'POST',
                headers: { Authorization: `Bearer ${world.token}`, 'Content-Type': 'application/json' },
                body: JSON.stringify({ list: list.key, email: `welcome${i + j}@example.org`, name: `Reader ${i + j}` }),
              }).then((r) => r.arrayBuffer()),
            ),
          );
        }
        const series = (step?: number) =>
          rows<{ id: string }>(world, `SELECT id::text FROM messages WHERE kind = 'series' AND ($1::int IS NULL OR step = $1)`, [step ?? null]).then((r) => r.map((x) => x.id));
        await kit.until(async () => (await series(1)).length >= PEOPLE && (await kit.deliveredCount(world.sink)) >= PEOPLE, 60_000, 'step 1 delivered', 250);
        const stepTwoWritten = (await series(2)).length;
        await world.redis.kill();
        kit.log('redis killed after step 1, with', stepTwoWritten, 'of step 2 written');
        await kit.sleep(3_000);
        await world.redis.start();
        const back = Date.now();
        kit.log('redis back (empty)');
        let ms: number | null = null;
        try {
          await kit.until(async () => (await series()).length >= 2 * PEOPLE && (await kit.deliveredCount(world.sink)) >= 2 * PEOPLE, 120_000, 'step 2 delivered', 250);
          ms = Date.now() - back;
        } catch {
          ms = null;
        }
        // late doubles would show up by now
        await kit.sleep(5_000);
        const ids = await series();
        const runs = await rows<{ status: string; n: number }>(world, 'SELECT status::text, count(*)::int AS n FROM series_runs GROUP BY status', []);
        const d = await kit.delivery(world.sink, ids);
        const done = runs.find((r) => r.status === 'done')?.n ?? 0;
        return {
          accepted: d.accepted,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: ms === null ? null : Math.round(ms / 100) / 10,
          duringFault: { people: PEOPLE, stepTwoWrittenBeforeTheLoss: stepTwoWritten, copies: ids.length, runs, allDeliveredSecondsAfterRedisBack: ms === null ? null : Math.round(ms / 100) / 10 },
          target: `every one of ${PEOPLE} subscribers gets both steps once after Redis comes back empty between them; every run done`,
          met: ms !== null && ids.length === 2 * PEOPLE && d.lost === 0 && d.duplicates === 0 && done === PEOPLE,
        };
      },
    },
  };
}
