import { runBroadcast } from '../../apps/core/src/broadcasts/run';
import { createBroadcast } from '../../apps/core/src/broadcasts/service';
import { db } from '../../apps/core/src/db';
import { DeliveryQueue } from '../../apps/core/src/delivery/outbox';
import { useMail } from '../helpers/mail';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { addActive, broadcastTenant } from './support';

/** Only delivery workers run in-process: the broadcast job itself runs in a child process, then twice at once here. */
const sink = useMail({ queues: ['delivery'], concurrency: 10 });

it('a broadcast worker killed mid-way, then the job run twice at once: exactly one copy each on a 5,000-subscriber list', async () => {
  const t = await broadcastTenant(sink.url);
  await addActive(t.listId, 5000, 'crash');
  const created = await createBroadcast(db(), { list: t.list.key, subject: 'Hi {{name}}', text: 'Number {{fields.n}}' });
  // the status only: the job is run by hand below, as a dying worker and then as two duplicates
  await db().broadcast.update({ where: { id: created.id }, data: { status: 'sending', runs: 1 } });

  const dying = runTs('test/broadcasts/fixtures/run-and-die.ts', [String(created.id)]);
  await waitFor(() => /page 3:/.test(dying.stdout()), { timeout: 60_000, what: 'three pages written by the dying worker' });
  const pid = Number(dying.stdout().split(':')[0]);
  process.kill(pid, 'SIGKILL');
  await dying.exited;
  const before = await db().message.count({ where: { broadcastId: created.id } });
  expect(before).toBeGreaterThanOrEqual(1500);
  expect(before).toBeLessThan(5000);

  const [a, b] = await Promise.all([runBroadcast(db(), new DeliveryQueue(), created.id), runBroadcast(db(), new DeliveryQueue(), created.id)]);
  // one of them closes the broadcast; the other finds it closed
  expect([a, b].sort()).toEqual(['sent', 'stopped']);
  expect(await db().message.count({ where: { broadcastId: created.id } })).toBe(5000);
  await waitFor(() => sink.messages.filter((m) => m.envelope.to[0]!.startsWith('crash-')).length >= 5000, { timeout: 120_000, what: '5,000 copies' });
  const to = sink.messages.filter((m) => m.envelope.to[0]!.startsWith('crash-')).map((m) => m.envelope.to[0]!);
  expect(to).toHaveLength(5000);
  expect(new Set(to).size).toBe(5000);
  const done = await db().broadcast.findUniqueOrThrow({ where: { id: created.id } });
  expect(done).toMatchObject({ status: 'sent', audience: 5000 });
  expect(await db().event.count({ where: { accountId: t.account.id, type: 'broadcast.finished' } })).toBe(1);
  // a third run after the end does nothing
  expect(await runBroadcast(db(), new DeliveryQueue(), created.id)).toBe('idle');
}, 240_000);
