import request from 'supertest';
import { subscriberOfToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { db } from '../../apps/core/src/db';
import { preferencesToken } from '../../apps/core/src/subscriber-links/preferences';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { randomUUID } from 'node:crypto';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { addSubscriber, broadcastTenant, rawHeaders, waitStatus } from '../broadcasts/support';

/**
 * Topics on the wire (docs/preferences.md): a broadcast of a topic goes to those in it (their choice, else the topic's
 * default) and not to a paused person; its List-Unsubscribe names the topic's one-click URL, whose RFC 8058 POST takes
 * the person out of that topic only; every list email links the preference centre.
 */
const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);

const TOPICS = [
  { id: 'news', name: 'News', description: 'What is new, monthly', default: 'in', public: true },
  { id: 'offers', name: 'Offers', default: 'out', public: true },
  { id: 'staff', name: 'Staff notes', default: 'out', public: false },
];

async function topicTenant() {
  const t = await broadcastTenant(sink.url);
  const patched = await admin().patch(`/admin/api/lists/${t.listId}`).send({ topics: TOPICS, public: true });
  expect(patched.status).toBe(200);
  return t;
}

async function startBroadcast(list: string, body: Record<string, unknown>) {
  const created = await admin().post('/admin/api/broadcasts').send({ list, ...body });
  expect(created.status).toBe(201);
  const started = await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
  expect(started.status).toBe(200);
  return created.body.broadcast.id as number;
}

const ledgerKinds = async (id: number) => (await db().consentEvent.findMany({ where: { subscriberId: id }, orderBy: { id: 'asc' } })).map((c) => `${c.kind}/${c.source}`);

describe('topics', () => {
  it('are kept on the list with its preference and archive addresses; two topics with one id are refused', async () => {
    const t = await topicTenant();
    const list = (await admin().get(`/admin/api/lists/${t.listId}`)).body.list;
    expect(list.topics).toEqual([
      { id: 'news', name: 'News', description: 'What is new, monthly', default: 'in', public: true },
      { id: 'offers', name: 'Offers', description: '', default: 'out', public: true },
      { id: 'staff', name: 'Staff notes', description: '', default: 'out', public: false },
    ]);
    expect(list.public).toBe(true);
    expect(list.preferences_url).toBe(`http://mail.test/preferences/list/${t.list.key}`);
    expect(list.archive_url).toBe(`http://mail.test/archive/${t.list.key}`);
    const twice = await admin().patch(`/admin/api/lists/${t.listId}`).send({ topics: [TOPICS[0], TOPICS[0]] });
    expect(twice.status).toBe(400);
    expect(twice.body).toEqual({ ok: false, error: 'topics[1]: two topics have the same id' });
    const bad = await admin().patch(`/admin/api/lists/${t.listId}`).send({ topics: [{ id: 'Bad Id', name: 'x' }] });
    expect(bad.status).toBe(400);
    expect((await admin().get(`/admin/api/lists/${t.listId}`)).body.list.topics).toHaveLength(3);
    const closed = await admin().patch(`/admin/api/lists/${t.listId}`).send({ public: false });
    expect(closed.body.list.archive_url).toBeNull();
  });

  it('a broadcast naming a topic of another list is refused with 400 and nothing is stored', async () => {
    const t = await topicTenant();
    const other = await broadcastTenant(sink.url);
    await admin().patch(`/admin/api/lists/${other.listId}`).send({ topics: [{ id: 'elsewhere', name: 'Elsewhere' }] });
    const refused = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'x', text: 'y', topics: ['elsewhere'] });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ ok: false, error: 'the list has no topic "elsewhere"' });
    expect(await db().broadcast.count({ where: { listId: t.listId } })).toBe(0);
  });

  it("goes to those in the topic, not to a paused person; List-Unsubscribe names the topic's one-click URL, whose POST leaves only that topic", async () => {
    const t = await topicTenant();
    const ann = await addSubscriber(t.listId, 'ann@topics.test', { name: 'Ann' });
    const bob = await addSubscriber(t.listId, 'bob@topics.test', { name: 'Bob' });
    const cat = await addSubscriber(t.listId, 'cat@topics.test', { name: 'Cat' });
    const dan = await addSubscriber(t.listId, 'dan@topics.test', { name: 'Dan' });
    await db().subscriber.update({ where: { id: bob.id }, data: { topics: { news: false } } });
    await db().subscriber.update({ where: { id: cat.id }, data: { pausedUntil: new Date(Date.now() + 86_400_000) } });
    await db().subscriber.update({ where: { id: dan.id }, data: { topics: { offers: true } } });

    // the dry run counts with the snapshot's rule: Ann and Dan (Bob chose out, Cat is paused)
    const count = await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, topics: ['news'] });
    expect(count.body).toEqual({ ok: true, count: 2 });
    expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, topics: ['offers', 'news'] })).body.count).toBe(2);
    expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, topics: ['offers'] })).body.count).toBe(1);
    expect((await admin().post('/admin/api/broadcasts/audience').send({ list: t.list.key, topics: ['nope'] })).status).toBe(400);
    const news = await startBroadcast(t.list.key, { subject: 'News', html: '<p>Hello {{name}}</p>', topics: ['news'] });
    const offers = await startBroadcast(t.list.key, { subject: 'Offers', text: 'Cheap, {{name}}', topics: ['offers'] });
    await waitStatus(news, 'sent');
    await waitStatus(offers, 'sent');
    expect(sink.to('ann@topics.test').map((m) => m.parsed.subject)).toEqual(['News']);
    expect(sink.to('bob@topics.test')).toEqual([]);
    expect(sink.to('cat@topics.test')).toEqual([]);
    expect(sink.to('dan@topics.test').map((m) => m.parsed.subject).sort()).toEqual(['News', 'Offers']);

    const mail = sink.to('ann@topics.test')[0]!;
    const [header] = rawHeaders(mail).get('list-unsubscribe')!;
    expect(header).toMatch(/^<http:\/\/mail\.test\/u\/[0-9]+\.[A-Za-z0-9_-]{32}\/t\/news>$/);
    expect(rawHeaders(mail).get('list-unsubscribe-post')).toEqual(['List-Unsubscribe=One-Click']);
    const oneClick = new URL(header!.slice(1, -1));
    expect(subscriberOfToken(oneClick.pathname.split('/')[2]!)).toBe(ann.id);
    // every list email links the person's preference centre
    const preferences = `http://mail.test/preferences/${preferencesToken(ann.id)}`;
    expect(mail.parsed.html).toContain(`<a href="${preferences}">Choose what you receive, pause or leave</a>`);
    expect(mail.parsed.text).toContain(preferences);
    expect(sink.to('dan@topics.test').find((m) => m.parsed.subject === 'Offers')!.parsed.text).toContain(`http://mail.test/preferences/${preferencesToken(dan.id)}`);
    // no stored copy holds a usable link
    expect(JSON.stringify(await db().message.findMany({ where: { broadcastId: news } }))).not.toContain(preferencesToken(ann.id));

    // GET asks and changes nothing (link scanners)
    const asked = await request(app.api.app).get(oneClick.pathname);
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('Stop News');
    expect((await db().subscriber.findUniqueOrThrow({ where: { id: ann.id } })).topics).toEqual({});

    const posted = await request(app.api.app).post(oneClick.pathname).type('form').send('List-Unsubscribe=One-Click');
    expect(posted.status).toBe(200);
    expect(posted.headers.location).toBeUndefined();
    const after = await db().subscriber.findUniqueOrThrow({ where: { id: ann.id } });
    expect(after).toMatchObject({ status: 'active', topics: { news: false } });
    expect(await ledgerKinds(ann.id)).toEqual(['topics/one_click']);
    const row = await db().consentEvent.findFirstOrThrow({ where: { subscriberId: ann.id } });
    expect(row.detail).toEqual({ changed: { news: false } });
    expect(row.ip).toMatch(/127\.0\.0\.1/);
    // again: the same answer, no second row
    expect((await request(app.api.app).post(oneClick.pathname).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
    expect(await ledgerKinds(ann.id)).toEqual(['topics/one_click']);

    // the next news skips her; a broadcast to the whole list still reaches her
    const again = await startBroadcast(t.list.key, { subject: 'News 2', text: 'More', topics: ['news'] });
    const all = await startBroadcast(t.list.key, { subject: 'Everyone', text: 'All of you' });
    await waitStatus(again, 'sent');
    await waitStatus(all, 'sent');
    expect(sink.to('ann@topics.test').map((m) => m.parsed.subject).sort()).toEqual(['Everyone', 'News']);
    expect(rawHeaders(sink.to('ann@topics.test').find((m) => m.parsed.subject === 'Everyone')!).get('list-unsubscribe')![0]).toMatch(/\/u\/[0-9]+\.[A-Za-z0-9_-]{32}>$/);
    // the paused person gets nothing until the pause ends
    expect(sink.to('cat@topics.test')).toEqual([]);
  });

  it('a per-topic link altered, of a topic the list does not have, or with another subscriber\'s id answers 404 and changes nothing', async () => {
    const t = await topicTenant();
    const eve = await addSubscriber(t.listId, 'eve@topics.test');
    const fay = await addSubscriber(t.listId, 'fay@topics.test');
    const id = await startBroadcast(t.list.key, { subject: 'News', text: 'Hi', topics: ['news'] });
    await waitStatus(id, 'sent');
    const path = new URL(rawHeaders(sink.to('eve@topics.test')[0]!).get('list-unsubscribe')![0]!.slice(1, -1)).pathname;
    const [, , token] = path.split('/');
    const mac = token!.split('.')[1]!;
    const altered = `${token!.slice(0, -1)}${token!.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [`/u/${altered}/t/news`, `/u/${fay.id}.${mac}/t/news`, `/u/${token}/t/elsewhere`, `/u/${token}/t/news,elsewhere`]) {
      expect((await request(app.api.app).post(bad).type('form').send('List-Unsubscribe=One-Click')).status).toBe(404);
      expect((await request(app.api.app).get(bad)).status).toBe(404);
    }
    for (const s of [eve, fay]) expect((await db().subscriber.findUniqueOrThrow({ where: { id: s.id } })).topics).toEqual({});
    expect(await db().consentEvent.count({ where: { subscriberId: { in: [eve.id, fay.id] } } })).toBe(0);
  });

  it("cancels the person's unclaimed copies of broadcasts whose topics they all left, and on a pause every unclaimed broadcast copy", async () => {
    const t = await topicTenant();
    const gus = await addSubscriber(t.listId, 'gus@topics.test');
    const draft = async (topics: string[]) => (await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 's', text: 't', topics })).body.broadcast.id as number;
    const [news, both, all] = [await draft(['news']), await draft(['news', 'offers']), await draft([])];
    // copies written and not yet taken by a worker (no delivery job: nothing sends them while the test looks)
    const copies = await Promise.all(
      [news, both, all].map(async (broadcastId) => {
        const id = randomUUID();
        await db().message.create({
          data: { id, accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'broadcast', to: gus.email, subject: 's', text: 't', messageIdHeader: `<${id}@example.com>`, broadcastId, subscriberId: gus.id },
        });
        return id;
      }),
    );
    const status = async () => (await Promise.all(copies.map((id) => db().message.findUniqueOrThrow({ where: { id } })))).map((m) => m.status);
    expect((await request(app.api.app).post(`/u/${unsubscribeToken(gus.id)}/t/news`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
    expect(await status()).toEqual(['cancelled', 'queued', 'queued']);
    const paused = await request(app.api.app).post(`/preferences/${preferencesToken(gus.id)}`).type('form').send('action=save&pause=90');
    expect(paused.status).toBe(200);
    expect(await status()).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(await ledgerKinds(gus.id)).toEqual(['topics/one_click', 'pause/preference_page']);
  });
});
