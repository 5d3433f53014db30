import { db } from '../../apps/core/src/db';
import { runDueSeriesBatch } from '../../apps/core/src/lifecycle/series';
import { asAdmin, useApi } from '../helpers/api';
import { address, listFixture } from '../lists/support';

/**
 * A pause from the preference page (docs/preferences.md) holds the welcome series too: a paused person's due step
 * waits, and goes out once the pause is over (broadcasts skip them: topics.test.ts).
 */
const app = useApi();

it("a paused subscriber's due series step waits for the pause's end, then goes out with the preference link", async () => {
  const f = await listFixture(app.api, { confirm: false });
  const listId = (f.list as { id: number }).id;
  const set = await asAdmin(app.api).patch(`/admin/api/lists/${listId}`).send({ steps: [{ subject: 'Welcome', text: 'Hello', delay_hours: 0 }] });
  expect(set.status).toBe(200);
  const email = address('paused');
  expect((await f.subscribe({ email })).body.status).toBe('active');
  const subscriber = (await f.subscriber(email))!;
  await db().subscriber.update({ where: { id: subscriber.id }, data: { pausedUntil: new Date(Date.now() + 3_600_000) } });
  await runDueSeriesBatch(db());
  expect(await db().message.count({ where: { subscriberId: subscriber.id, kind: 'series' } })).toBe(0);
  expect(await db().seriesRun.findUniqueOrThrow({ where: { subscriberId: subscriber.id } })).toMatchObject({ step: 0, status: 'waiting' });

  await db().subscriber.update({ where: { id: subscriber.id }, data: { pausedUntil: new Date(Date.now() - 1000) } });
  await runDueSeriesBatch(db());
  const [step] = await db().message.findMany({ where: { subscriberId: subscriber.id, kind: 'series' } });
  expect(step).toMatchObject({ subject: 'Welcome' });
  // stored with the marker; the worker puts the person's link in on the wire
  expect(step!.text).toContain('Choose what you receive, pause or leave: {{preferences_url}}');
});
