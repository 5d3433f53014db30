import { PAGE_SIZE, PAGES_AHEAD, runBroadcast } from '../../apps/core/src/broadcasts/run';
import { createBroadcast } from '../../apps/core/src/broadcasts/service';
import { db, rawQuery } from '../../apps/core/src/db';
import { DeliveryQueue } from '../../apps/core/src/delivery/outbox';
import { waitFor } from '../helpers/wait';
import { addActive, broadcastTenant } from './support';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** No delivery worker runs here: the copies stay queued until the test marks them sent. */
it('a run keeps PAGES_AHEAD pages waiting and writes the next one only when every copy of the oldest is off the queue', async () => {
  const t = await broadcastTenant('smtp://127.0.0.1:9');
  await addActive(t.listId, PAGE_SIZE * (PAGES_AHEAD + 1) + 10, 'ahead');
  const created = await createBroadcast(db(), { list: t.list.key, subject: 'Hi {{name}}', text: 'Number {{fields.n}}' });
  await db().broadcast.update({ where: { id: created.id }, data: { status: 'sending', runs: 1 } });
  const pages: number[] = [];
  const run = runBroadcast(db(), new DeliveryQueue(), created.id, { pollMs: 20, onPage: (n) => pages.push(n) });

  await waitFor(() => pages.length === PAGES_AHEAD, { timeout: 60_000, what: `${PAGES_AHEAD} pages written` });
  await sleep(300);
  expect(pages).toEqual(Array(PAGES_AHEAD).fill(PAGE_SIZE));

  // the oldest page's copies all sent but one: the run waits on that one (it reads again only what was left)
  const oldest = await rawQuery<{ id: string }>(
    db(),
    'SELECT id::text FROM messages WHERE broadcast_id = $1 ORDER BY subscriber_id LIMIT $2',
    [created.id, PAGE_SIZE],
  );
  const last = oldest.pop()!.id;
  await rawQuery(db(), `UPDATE messages SET status = 'sent' WHERE id = ANY($1::uuid[])`, [oldest.map((r) => r.id)]);
  await sleep(1000);
  expect(pages).toHaveLength(PAGES_AHEAD);
  // a copy of the second page sent meanwhile does not count for the oldest
  const [second] = await rawQuery<{ id: string }>(db(), 'SELECT id::text FROM messages WHERE broadcast_id = $1 ORDER BY subscriber_id OFFSET $2 LIMIT 1', [created.id, PAGE_SIZE]);
  await rawQuery(db(), `UPDATE messages SET status = 'sent' WHERE id = $1::uuid`, [second!.id]);
  await sleep(500);
  expect(pages).toHaveLength(PAGES_AHEAD);

  await rawQuery(db(), `UPDATE messages SET status = 'sent' WHERE id = $1::uuid`, [last]);
  await waitFor(() => pages.length === PAGES_AHEAD + 1, { timeout: 10_000, what: 'the next page once the oldest is sent' });

  await db().broadcast.update({ where: { id: created.id }, data: { status: 'paused' } });
  expect(await run).toBe('stopped');
  expect(await db().message.count({ where: { broadcastId: created.id } })).toBe(PAGE_SIZE * (PAGES_AHEAD + 1));
}, 120_000);
