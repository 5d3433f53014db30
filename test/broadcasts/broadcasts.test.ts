import request from 'supertest';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addActive, addSubscriber, broadcastTenant, rawHeaders, waitStatus } from './support';

const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);

async function startBroadcast(list: string, body: Record<string, unknown>) {
  const created = await admin().post('/admin/api/broadcasts').send({ list, ...body });
  expect(created.status).toBe(201);
  expect(created.body.broadcast.status).toBe('draft');
  const started = await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
  expect(started.status).toBe(200);
  return created.body.broadcast.id as number;
}

it('renders each copy for its person (placeholders, html escaping, a text part) and every copy carries the three list headers', async () => {
  const t = await broadcastTenant(sink.url);
  await addSubscriber(t.listId, 'ann@readers.org', { name: '<b>Ann</b> & "Co"', fields: { city: 'Oslo<script>' } });
  await addSubscriber(t.listId, 'bob@readers.org', { name: '' });
  const id = await startBroadcast(t.list.key, {
    subject: 'News for {{name}}',
    html: '<p>Hi {{name}} from {{fields.city}}{{fields.missing}}{{nothing}}!</p><p><a href="{{unsubscribe_url}}">Leave</a></p>',
  });
  await waitStatus(id, 'sent');
  const ann = sink.to('ann@readers.org');
  const bob = sink.to('bob@readers.org');
  expect(ann).toHaveLength(1);
  expect(bob).toHaveLength(1);
  const annMail = ann[0]!.parsed;
  expect(annMail.subject).toBe('News for <b>Ann</b> & "Co"');
  expect(annMail.html).toContain('<p>Hi &lt;b&gt;Ann&lt;/b&gt; &amp; &quot;Co&quot; from Oslo&lt;script&gt;!</p>');
  const url = `http://mail.test/u/${unsubscribeToken((await db().subscriber.findFirstOrThrow({ where: { email: 'ann@readers.org' } })).id)}`;
  expect(annMail.html).toContain(`<a href="${url}">Leave</a>`);
  expect(annMail.text).toContain('Hi <b>Ann</b> & "Co" from Oslo<script>!');
  expect(bob[0]!.parsed.html).toContain('<p>Hi  from !</p>');
  for (const mail of [...ann, ...bob]) {
    const headers = rawHeaders(mail);
    expect(headers.get('list-unsubscribe')).toEqual([expect.stringMatching(/^<http:\/\/mail\.test\/u\/[0-9]+\.[A-Za-z0-9_-]{32}>$/)]);
    expect(headers.get('list-unsubscribe-post')).toEqual(['List-Unsubscribe=One-Click']);
    expect(headers.get('list-id')).toEqual([`"The <Weekly> & Co" <${t.list.key.toLowerCase()}.example.com>`]);
  }
  expect(rawHeaders(ann[0]!).get('list-unsubscribe')).toEqual([`<${url}>`]);
  // the link is put in on the way to the wire: no stored copy holds a usable token (docs/hardening.md)
  const token = url.split('/u/')[1]!;
  const stored = await db().message.findMany({ where: { broadcastId: id }, select: { text: true, html: true, headers: true } });
  expect(stored).toHaveLength(2);
  expect(JSON.stringify(stored)).not.toContain(token);
  expect(JSON.stringify(stored)).not.toContain('/u/');
  const got = await admin().get(`/admin/api/broadcasts/${id}`);
  expect(got.body.broadcast).toMatchObject({ id, list: t.list.key, status: 'sent', audience: 2, sent: 2, failed: 0, skipped: 0 });
  expect(got.body.broadcast.started_at).toEqual(expect.any(String));
  expect(got.body.broadcast.finished_at).toEqual(expect.any(String));
  const events = await db().event.findMany({ where: { accountId: t.account.id, type: 'broadcast.finished' } });
  expect(events).toHaveLength(1);
  expect(events[0]!.data).toMatchObject({ broadcast: id, audience: 2, sent: 2 });
});

it('one-click POST (RFC 8058 body) unsubscribes at once; GET changes nothing; a later broadcast skips the person', async () => {
  const t = await broadcastTenant(sink.url);
  const carl = await addSubscriber(t.listId, 'carl@readers.org', { name: 'Carl' });
  await addSubscriber(t.listId, 'dora@readers.org', { name: 'Dora' });
  const first = await startBroadcast(t.list.key, { subject: 'One', text: 'Hello {{name}}, leave: {{unsubscribe_url}}' });
  await waitStatus(first, 'sent');
  const link = rawHeaders(sink.to('carl@readers.org')[0]!).get('list-unsubscribe')![0]!.slice(1, -1);
  const path = new URL(link).pathname;
  expect(sink.to('carl@readers.org')[0]!.parsed.text).toContain(link);

  const page = await request(app.api.app).get(path);
  expect(page.status).toBe(200);
  expect(page.text).toContain('<form method="post">');
  expect(page.text).toContain('The &lt;Weekly&gt; &amp; Co');
  expect(page.headers['x-frame-options']).toBe('DENY');
  expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(page.headers['x-content-type-options']).toBe('nosniff');
  expect((await db().subscriber.findUniqueOrThrow({ where: { id: carl.id } })).status).toBe('active');

  const oneClick = await request(app.api.app).post(path).type('form').send('List-Unsubscribe=One-Click');
  expect(oneClick.status).toBe(200);
  expect(oneClick.headers.location).toBeUndefined();
  expect(oneClick.text).toContain('You are unsubscribed');
  expect((await db().subscriber.findUniqueOrThrow({ where: { id: carl.id } })).status).toBe('unsubscribed');
  expect((await db().list.findUniqueOrThrow({ where: { id: t.listId } })).subscriberCount).toBe(1);
  // again: the same answer, nothing moves
  expect((await request(app.api.app).post(path).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
  expect((await db().list.findUniqueOrThrow({ where: { id: t.listId } })).subscriberCount).toBe(1);

  const unknown = await request(app.api.app).get('/u/1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  expect(unknown.status).toBe(404);
  expect(unknown.text).toContain('This link is not valid');
  expect((await request(app.api.app).post(`/u/${carl.id}.${'B'.repeat(32)}`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(404);

  const second = await startBroadcast(t.list.key, { subject: 'Two', text: 'Again' });
  await waitStatus(second, 'sent');
  expect(sink.to('carl@readers.org').map((m) => m.parsed.subject)).toEqual(['One']);
  expect(sink.to('dora@readers.org').map((m) => m.parsed.subject)).toEqual(['One', 'Two']);
});

it('the audience: every tag asked, less unsubscribed, suppressed and stop-listed people', async () => {
  const t = await broadcastTenant(sink.url);
  await addSubscriber(t.listId, 'both@readers.org', { tags: ['news', 'vip'] });
  await addSubscriber(t.listId, 'news-only@readers.org', { tags: ['news'] });
  await addSubscriber(t.listId, 'left@readers.org', { tags: ['news', 'vip'], status: 'unsubscribed' });
  await addSubscriber(t.listId, 'pending@readers.org', { tags: ['news', 'vip'], status: 'pending' });
  await addSubscriber(t.listId, 'bounced@readers.org', { tags: ['news', 'vip'] });
  await addSubscriber(t.listId, 'someone@stopped.org', { tags: ['news', 'vip'] });
  // a stop-listed domain covers its subdomains (stop-list/repository.ts), and only them: not a name that merely ends alike
  await addSubscriber(t.listId, 'reader@news.stopped.org', { tags: ['news'] });
  await addSubscriber(t.listId, 'reader@notstopped.org', { tags: ['news'] });
  await db().suppression.create({ data: { accountId: t.account.id, email: 'bounced@readers.org', reason: 'bounced' } });
  await db().stopEntry.create({ data: { accountId: t.account.id, value: 'stopped.org', kind: 'domain' } });
  const tagged = await startBroadcast(t.list.key, { subject: 'VIP', text: 'x', tags: ['news', 'vip'] });
  const all = await startBroadcast(t.list.key, { subject: 'All', text: 'x' });
  await waitStatus(tagged, 'sent');
  await waitStatus(all, 'sent');
  const subjects = (to: string) => sink.to(to).map((m) => m.parsed.subject).sort();
  expect(subjects('both@readers.org')).toEqual(['All', 'VIP']);
  expect(subjects('news-only@readers.org')).toEqual(['All']);
  expect(subjects('reader@notstopped.org')).toEqual(['All']);
  for (const none of ['left@readers.org', 'pending@readers.org', 'bounced@readers.org', 'someone@stopped.org', 'reader@news.stopped.org']) expect(subjects(none)).toEqual([]);
  expect((await admin().get(`/admin/api/broadcasts/${tagged}`)).body.broadcast).toMatchObject({ audience: 1, sent: 1 });
  const listed = await admin().get(`/admin/api/broadcasts?list=${t.list.key}`);
  expect(listed.body.broadcasts.map((b: { id: number }) => b.id)).toEqual([all, tagged]);
});

it('pause stops further copies; resume finishes with exactly one copy each', async () => {
  const t = await broadcastTenant(sink.url);
  await addActive(t.listId, 3000, 'paused');
  sink.dataDelayMs = 5;
  const id = await startBroadcast(t.list.key, { subject: 'Slow', text: 'Hi {{name}}' });
  const count = () => sink.messages.filter((m) => m.envelope.to[0]!.startsWith('paused-')).length;
  await waitFor(() => count() >= 300, { timeout: 60_000, what: 'some copies out' });
  const paused = await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'paused' });
  expect(paused.body.broadcast.status).toBe('paused');
  // the copies already on the wire finish; nothing queued is left, and nothing more is written
  await waitFor(async () => (await db().message.count({ where: { broadcastId: id, status: { in: ['queued', 'sending', 'deferred'] } } })) === 0, {
    timeout: 30_000,
    what: 'in-flight copies done',
  });
  const atPause = count();
  expect(atPause).toBeLessThan(3000);
  expect(await db().message.count({ where: { broadcastId: id } })).toBe(atPause);
  const progress = (await admin().get(`/admin/api/broadcasts/${id}`)).body.broadcast;
  expect(progress).toMatchObject({ status: 'paused', audience: 3000, sent: atPause });
  sink.dataDelayMs = 0;
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ subject: 'edited' })).status).toBe(409);
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' })).body.broadcast.status).toBe('sending');
  await waitStatus(id, 'sent', 120_000);
  const to = sink.messages.filter((m) => m.envelope.to[0]!.startsWith('paused-')).map((m) => m.envelope.to[0]);
  expect(to).toHaveLength(3000);
  expect(new Set(to).size).toBe(3000);
  expect((await admin().get(`/admin/api/broadcasts/${id}`)).body.broadcast).toMatchObject({ status: 'sent', sent: 3000, skipped: 0 });
}, 180_000);

it('refuses what it cannot do, changing nothing', async () => {
  const t = await broadcastTenant(sink.url);
  expect((await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'x' })).status).toBe(400);
  expect((await admin().post('/admin/api/broadcasts').send({ list: 'nope', subject: 'x', text: 'y' })).status).toBe(404);
  const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'Draft', text: 'y', send_at: new Date(Date.now() + 3600_000).toISOString() });
  const id = created.body.broadcast.id;
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ subject: 'Edited {{name}}' })).body.broadcast.subject).toBe('Edited {{name}}');
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'paused' })).status).toBe(409);
  const scheduled = await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' });
  expect(scheduled.body.broadcast.status).toBe('scheduled');
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'cancelled' })).body.broadcast.status).toBe('cancelled');
  expect((await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' })).status).toBe(409);
  expect((await admin().get('/admin/api/broadcasts/999999')).status).toBe(404);
});

it('send_at ahead: scheduled, then sent when it comes; a mailbox max_per_second paces the copies', async () => {
  const t = await broadcastTenant(sink.url, { max_per_second: 20 });
  await addActive(t.listId, 60, 'paced');
  const sendAt = new Date(Date.now() + 5000);
  const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'Later', text: 'x', send_at: sendAt.toISOString() });
  const started = await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
  expect(started.body.broadcast.status).toBe('scheduled');
  const done = await waitStatus(created.body.broadcast.id, 'sent', 60_000);
  expect(done.startedAt!.getTime()).toBeGreaterThanOrEqual(sendAt.getTime());
  // 60 copies at 20 a second: three pages a second apart, so at least two seconds from start to finish
  expect(done.finishedAt!.getTime() - done.startedAt!.getTime()).toBeGreaterThanOrEqual(2000);
  expect(sink.messages.filter((m) => m.envelope.to[0]!.startsWith('paced-'))).toHaveLength(60);
});
