import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { runTs, type Proc } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { activeRows, listFixture } from './support';

const server = useApi();
const LINES = 60_000;

it('a worker killed in the middle of an import: the next worker resumes at the cursor, and every line counts once', async () => {
  const f = await listFixture(server.api, { confirm: false });
  const workers: Proc[] = [];
  try {
    workers.push(runTs('apps/worker/src/main.ts', [], { WORKER_CONCURRENCY: '2' }));
    const csv = ['email,name', ...Array.from({ length: LINES }, (_, i) => `r${i}@example.com,Reader ${i}`)].join('\n');
    const res = await asAdmin(server.api).post(`/admin/api/lists/${f.list.id}/import`).set('Content-Type', 'text/csv').send(csv);
    expect(res.status).toBe(202);
    const id = res.body.import.id as number;
    const partway = await waitFor(
      async () => {
        const row = await db().import.findUniqueOrThrow({ where: { id } });
        return row.cursor > 0 ? row : undefined;
      },
      { timeout: 60_000, interval: 10, what: 'the first batch applied' },
    );
    workers[0]!.child.kill('SIGKILL');
    await workers[0]!.exited;
    // killed with lines left: what follows is a resumption, not a rerun of a finished import
    expect(partway.cursor).toBeLessThan(LINES);
    expect((await db().import.findUniqueOrThrow({ where: { id } })).status).toBe('running');

    workers.push(runTs('apps/worker/src/main.ts', [], { WORKER_CONCURRENCY: '2' }));
    const done = await waitFor(
      async () => {
        const answer = (await asAdmin(server.api).get(`/admin/api/imports/${id}`)).body.import;
        return answer.status === 'done' ? answer : undefined;
      },
      { timeout: 90_000, interval: 200, what: 'the import done by the second worker' },
    );
    expect(done).toMatchObject({ total: LINES, processed: LINES, added: LINES, updated: 0, skipped: 0, refused: 0, errors: [] });
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(LINES);
    expect(await f.count()).toBe(LINES);
    expect(await activeRows(f.list.id)).toBe(LINES);
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
  }
}, 180_000);
