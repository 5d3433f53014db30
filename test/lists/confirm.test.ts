import request from 'supertest';
import { sha256 } from '../../apps/core/src/crypto';
import { db } from '../../apps/core/src/db';
import { confirmationTokenOf } from '../../apps/core/src/subscribers/confirm-link';
import { useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { activeRows, address, confirmationMessages, listFixture, tokenFrom, tokenOfStored } from './support';

const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });

/** A pending person and the token of their confirmation email (read from the stored message). */
async function pendingPerson(options: { name?: string } = {}) {
  const f = await listFixture(ctx.api, { smtp: sink.url, name: options.name });
  const email = address();
  expect((await f.subscribe({ email })).body.status).toBe('pending');
  const [message] = await confirmationMessages(email);
  return { ...f, email, token: tokenOfStored(message!) };
}

const page = (path: string) => request(ctx.api.app).get(path);
const press = (path: string) => request(ctx.api.app).post(path).type('form').send('');

describe('the confirmation email (double opt-in)', () => {
  it('goes out on the wire from the list\'s mailbox to the person, with the link', async () => {
    const f = await listFixture(ctx.api, { smtp: sink.url, name: 'Weekly Notes' });
    const email = address();
    await f.subscribe({ email, name: 'Grace' });
    const mail = await waitFor(() => sink.to(email)[0], { timeout: 15_000, what: 'the confirmation email' });
    expect(mail.envelope.from).toBe(f.tenant.mailbox.address);
    expect(mail.envelope.to).toEqual([email]);
    expect(mail.parsed.from?.value[0]?.address).toBe(f.tenant.mailbox.address);
    expect(mail.parsed.subject).toBe('Confirm your subscription to Weekly Notes');
    const token = tokenFrom(mail.parsed.text);
    expect(mail.parsed.text).toContain('Hello Grace,');
    expect(mail.parsed.html).toContain(`http://mail.test/confirm/${token}`);
    const [message] = await confirmationMessages(email);
    expect(message).toMatchObject({ kind: 'confirmation', mailboxId: f.tenant.mailbox.id, subscriberId: (await f.subscriber(email))!.id });
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id: message!.id } })).status === 'sent');
    // no table holds the link's token: the stored body has a placeholder, the token table its SHA-256
    const tables = await db().$queryRawUnsafe<{ dump: string }[]>(
      `SELECT (SELECT coalesce(string_agg(m::text, ''), '') FROM messages m) || (SELECT coalesce(string_agg(t::text, ''), '') FROM confirmation_tokens t) || (SELECT coalesce(string_agg(e::text, ''), '') FROM events e) AS dump`,
    );
    expect(tables[0]!.dump).not.toContain(token);
    expect(tables[0]!.dump).toContain('{{confirmation_link}}');
    // the link from the wire leads to the page that confirms
    const path = new URL(mail.parsed.text!.match(/http:\/\/mail\.test\/confirm\/\S+/)![0]).pathname;
    expect((await page(path)).status).toBe(200);
    expect((await press(path)).status).toBe(200);
    expect((await f.subscriber(email))?.status).toBe('active');
  });

  it("puts in the link a token of 32 lowercase hex characters, the HMAC of the email's id, and no other", async () => {
    const f = await listFixture(ctx.api, { smtp: sink.url });
    const email = address();
    await f.subscribe({ email });
    const mail = await waitFor(() => sink.to(email)[0], { timeout: 15_000, what: 'the confirmation email' });
    const [message] = await confirmationMessages(email);
    const links = [...mail.parsed.text!.matchAll(/\/confirm\/(\S+)/g)].map((m) => m[1]);
    expect(links).toEqual([confirmationTokenOf(message!.id)]);
    expect(links[0]).toMatch(/^[0-9a-f]{32}$/);
    // the one token stored for the person is that one's (by its hash)
    const rows = await db().confirmationToken.findMany({ where: { subscriberId: (await f.subscriber(email))!.id } });
    expect(rows.map((r) => r.tokenHash)).toEqual([sha256(links[0]!)]);
  });

  it('stores only the SHA-256 of the token, valid for 7 days', async () => {
    const p = await pendingPerson();
    const row = await db().confirmationToken.findUniqueOrThrow({ where: { tokenHash: sha256(p.token) } });
    const days = (row.expiresAt.getTime() - row.createdAt.getTime()) / 86_400_000;
    expect(days).toBeCloseTo(7, 5);
    const dump = JSON.stringify(await db().$queryRawUnsafe('SELECT * FROM confirmation_tokens'));
    expect(dump).not.toContain(p.token);
  });

  it('escapes the list name and the person\'s name in the HTML email', async () => {
    const f = await listFixture(ctx.api, { smtp: sink.url, name: '<b>News</b> & "more"' });
    const email = address();
    await f.subscribe({ email, name: '<img src=x onerror=alert(1)>' });
    const [message] = await confirmationMessages(email);
    expect(message!.html).toContain('&lt;b&gt;News&lt;/b&gt; &amp; &quot;more&quot;');
    expect(message!.html).not.toContain('<img');
    expect(message!.html).not.toContain('<b>News');
  });
});

describe('GET /confirm/<token>', () => {
  it('shows a page with a Confirm button that posts to the same address, and changes nothing', async () => {
    const p = await pendingPerson({ name: 'Field Notes' });
    for (let i = 0; i < 3; i++) {
      const res = await page(`/confirm/${p.token}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('<html lang="en">');
      expect(res.text).toMatch(/<form method="post">\s*<button type="submit">Confirm subscription<\/button>/);
      expect(res.text).toContain('Field Notes');
    }
    expect((await p.subscriber(p.email))?.status).toBe('pending');
    expect(await p.count()).toBe(0);
    const row = await db().confirmationToken.findUniqueOrThrow({ where: { tokenHash: sha256(p.token) } });
    expect(row.usedAt).toBeNull();
  });

  it('escapes the list name on the page', async () => {
    const p = await pendingPerson({ name: '<script>alert(1)</script>' });
    const res = await page(`/confirm/${p.token}`);
    expect(res.text).not.toContain('<script>');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('answers an HTML 404 page for an unknown or malformed token', async () => {
    for (const token of ['A'.repeat(32), 'not-a-token', '%3Cscript%3E']) {
      const res = await page(`/confirm/${token}`);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('This link is not valid');
      expect(res.text).not.toContain('<script>');
    }
  });
});

describe('POST /confirm/<token>', () => {
  it('confirms: the person becomes active, is counted, and sees a thank-you page', async () => {
    const p = await pendingPerson({ name: 'Field Notes' });
    const res = await press(`/confirm/${p.token}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Thank you, you are subscribed');
    const row = await p.subscriber(p.email);
    expect(row?.status).toBe('active');
    expect(row?.confirmedAt).toBeInstanceOf(Date);
    expect(await p.count()).toBe(1);
    expect((await p.client.get('/api/v1/lists')).body.lists[0].subscribers).toBe(1);
  });

  it('is single-use: a second POST or GET shows a clear "already used" page and counts nothing', async () => {
    const p = await pendingPerson();
    expect((await press(`/confirm/${p.token}`)).status).toBe(200);
    const again = await press(`/confirm/${p.token}`);
    expect(again.status).toBe(410);
    expect(again.headers['content-type']).toMatch(/^text\/html/);
    expect(again.text).toContain('This link was already used');
    expect((await page(`/confirm/${p.token}`)).status).toBe(410);
    expect(await p.count()).toBe(1);
  });

  it('confirms once when the same link is posted 10 times at once', async () => {
    const p = await pendingPerson();
    const answers = await Promise.all(Array.from({ length: 10 }, () => press(`/confirm/${p.token}`)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 410)).toHaveLength(9);
    expect(await p.count()).toBe(1);
    expect(await activeRows(p.list.id)).toBe(1);
  });

  it('spends the older link too once the person confirmed with a newer one', async () => {
    const p = await pendingPerson();
    await db().subscriber.update({ where: { listId_email: { listId: p.list.id, email: p.email } }, data: { confirmationSentAt: new Date(Date.now() - 3_700_000) } });
    await p.subscribe({ email: p.email });
    const messages = await confirmationMessages(p.email);
    expect(messages).toHaveLength(2);
    const newer = tokenOfStored(messages[1]!);
    expect(newer).not.toBe(p.token);
    expect((await press(`/confirm/${newer}`)).status).toBe(200);
    expect((await press(`/confirm/${p.token}`)).status).toBe(410);
    expect(await p.count()).toBe(1);
  });

  it('refuses an expired link with a clear page, on GET and POST, and leaves the person pending', async () => {
    const p = await pendingPerson();
    await db().confirmationToken.update({ where: { tokenHash: sha256(p.token) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const get = await page(`/confirm/${p.token}`);
    expect(get.status).toBe(410);
    expect(get.text).toContain('This link has expired');
    const post = await press(`/confirm/${p.token}`);
    expect(post.status).toBe(410);
    expect(post.headers['content-type']).toMatch(/^text\/html/);
    expect(post.text).toContain('This link has expired');
    expect((await p.subscriber(p.email))?.status).toBe('pending');
    expect(await p.count()).toBe(0);
  });

  it('still works a moment before the 7 days are up', async () => {
    const p = await pendingPerson();
    await db().confirmationToken.update({ where: { tokenHash: sha256(p.token) }, data: { expiresAt: new Date(Date.now() + 60_000) } });
    expect((await press(`/confirm/${p.token}`)).status).toBe(200);
  });

  it('does not bring back a person who unsubscribed before following the link', async () => {
    const p = await pendingPerson();
    expect((await p.unsubscribe({ email: p.email })).body.status).toBe('unsubscribed');
    const res = await press(`/confirm/${p.token}`);
    expect(res.status).toBe(410);
    expect((await p.subscriber(p.email))?.status).toBe('unsubscribed');
    expect(await p.count()).toBe(0);
  });

  it('tells a person who was already made active through the API that they are subscribed, counting them once', async () => {
    const p = await pendingPerson();
    expect((await p.subscribe({ email: p.email, confirmed: true })).body.status).toBe('active');
    const res = await press(`/confirm/${p.token}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('You are already subscribed');
    expect(await p.count()).toBe(1);
  });

  it('answers an HTML 404 page for an unknown token', async () => {
    const res = await press(`/confirm/${'B'.repeat(32)}`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});
