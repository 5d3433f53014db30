import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeList, makeMailbox } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { addSubscriber, broadcastTenant, waitStatus } from '../broadcasts/support';

const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);

async function sendBroadcast(list: string, body: Record<string, unknown>): Promise<number> {
  const created = await admin().post('/admin/api/broadcasts').send({ list, ...body });
  expect(created.status).toBe(201);
  const id = created.body.broadcast.id as number;
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' })).status).toBe(200);
  await waitStatus(id, 'sent');
  return id;
}

const subjects = (subject: string) => sink.messages.filter((m) => m.parsed.subject === subject).map((m) => m.envelope.to[0]).sort();

it('a broadcast to "country=DE and did not click broadcast N" reaches exactly those, and its dry run gave the same number', async () => {
  const t = await broadcastTenant(sink.url);
  const who = (n: string) => `${n}-${t.listId}@readers.org`;
  const ann = await addSubscriber(t.listId, who('ann'), { fields: { country: 'DE' } });
  await addSubscriber(t.listId, who('bea'), { fields: { country: 'DE' } });
  await addSubscriber(t.listId, who('cid'), { fields: { country: 'FR' } });
  const eva = await addSubscriber(t.listId, who('eva'), { fields: { country: 'DE' } });
  await addSubscriber(t.listId, who('fay'), { fields: { country: 'DE' } });
  const first = await sendBroadcast(t.list.key, { subject: `Issue 1 of ${t.listId}`, html: '<p><a href="https://example.org/read">read</a></p>' });
  // after the first broadcast: Ann clicked; Eva's only click was a link scanner's (not a person's); Dan came later; Fay left
  const copy = (subscriberId: number) => db().message.findFirstOrThrow({ where: { broadcastId: first, subscriberId } });
  await db().linkClick.create({ data: { messageId: (await copy(ann.id)).id, accountId: t.account.id, broadcastId: first, url: 'https://example.org/read' } });
  await db().linkClick.create({ data: { messageId: (await copy(eva.id)).id, accountId: t.account.id, broadcastId: first, url: 'https://example.org/read', scanner: true } });
  await addSubscriber(t.listId, who('dan'), { fields: { country: 'DE' } });
  await db().subscriber.update({ where: { listId_email: { listId: t.listId, email: who('fay') } }, data: { status: 'unsubscribed' } });

  const audience = { fields: { country: 'DE' }, engaged: { not_clicked: first } };
  const dry = await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, audience });
  expect(dry.status).toBe(200);
  expect(dry.body).toEqual({ ok: true, count: 2 });
  const second = await sendBroadcast(t.list.key, { subject: `Issue 1 again of ${t.listId}`, text: 'In case you missed it', audience });
  expect(subjects(`Issue 1 again of ${t.listId}`)).toEqual([who('bea'), who('eva')]);
  const shown = await admin().get(`/admin/api/broadcasts/${second}`);
  expect(shown.body.broadcast).toMatchObject({ audience: dry.body.count, sent: 2, segment: { fields: { country: 'DE' }, engaged: { not_clicked: first } } });

  // the other forms, counted by the same rule
  const count = async (a: object) => (await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, audience: a })).body.count;
  expect(await count({})).toBe(5);
  expect(await count({ fields: { country: { in: ['DE', 'FR'] } } })).toBe(5);
  expect(await count({ fields: { country: 'FR' } })).toBe(1);
  expect(await count({ engaged: { clicked: first } })).toBe(1);
  expect(await count({ engaged: { not_opened: first } })).toBe(4);
  expect(await count({ engaged: { opened: first } })).toBe(0);
  const dan = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: t.listId, email: who('dan') } } });
  expect(await count({ subscribed_after: dan.createdAt.toISOString() })).toBe(1);
  expect(await count({ subscribed_before: dan.createdAt.toISOString() })).toBe(4);
});

it('a segment naming an unknown field or another account\'s broadcast is refused with 400, and nothing is created', async () => {
  const t = await broadcastTenant(sink.url);
  await addSubscriber(t.listId, `x-${t.listId}@readers.org`, { fields: { country: 'DE' } });
  const other = await makeAccount();
  const otherList = await makeList(other.id, (await makeMailbox(other.id, { smtp: sink.url })).id, { confirm: false });
  const foreign = await admin().post('/admin/api/broadcasts').send({ list: otherList.key, subject: 'Theirs', text: 'x' });
  const before = await db().broadcast.count();

  const unknown = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'S', text: 'x', audience: { fields: { planet: 'Mars' } } });
  expect(unknown.status).toBe(400);
  expect(unknown.body).toEqual({ ok: false, error: expect.stringContaining('"planet"') });
  const theirs = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'S', text: 'x', audience: { engaged: { not_clicked: foreign.body.broadcast.id } } });
  expect(theirs.status).toBe(400);
  expect(theirs.body.error).toContain(String(foreign.body.broadcast.id));
  expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, audience: { fields: { planet: 'Mars' } } })).status).toBe(400);
  expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, audience: { engaged: { opened: foreign.body.broadcast.id } } })).status).toBe(400);
  expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, audience: { engaged: {} } })).status).toBe(400);
  expect((await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'S', text: 'x', tags: ['a'], audience: { tags: ['b'] } })).status).toBe(400);
  expect(await db().broadcast.count()).toBe(before);
  // a draft's audience can be changed, and is checked the same way
  const draft = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'S', text: 'x' });
  expect((await admin().patch(`/admin/api/broadcasts/${draft.body.broadcast.id}`).send({ audience: { fields: { planet: 'Mars' } } })).status).toBe(400);
  const changed = await admin().patch(`/admin/api/broadcasts/${draft.body.broadcast.id}`).send({ audience: { tags: ['vip'], fields: { country: 'DE' } } });
  expect(changed.status).toBe(200);
  expect(changed.body.broadcast).toMatchObject({ tags: ['vip'], segment: { fields: { country: 'DE' } } });
});
