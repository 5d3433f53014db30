import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { redis } from '../../apps/core/src/redis';
import { windowKey } from '../../apps/core/src/subscribers/limit';
import { useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { address, confirmationMessages, listFixture, tokenFrom } from './support';

const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });

const open = (key: string) => request(ctx.api.app).get(`/f/${key}`);
const submit = (key: string, fields: Record<string, string>) => request(ctx.api.app).post(`/f/${key}`).type('form').send(fields);
const html = (res: request.Response) => expect(res.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);

describe('the list\'s hosted form: GET /f/<list key>', () => {
  it('serves an accessible subscribe form with email, name and a hidden honeypot', async () => {
    const f = await listFixture(ctx.api, { name: 'Garden Club' });
    const res = await open(f.list.key);
    expect(res.status).toBe(200);
    html(res);
    expect(res.text).toContain('<html lang="en">');
    expect(res.text).toContain('<title>Subscribe to Garden Club</title>');
    expect(res.text).toContain('<form method="post">');
    expect(res.text).toMatch(/<label for="email">[^<]+<\/label>\s*<input type="email" id="email" name="email" autocomplete="email" required/);
    expect(res.text).toMatch(/<label for="name">Name/);
    expect(res.text).toMatch(/<input type="text" id="name" name="name" autocomplete="name"/);
    expect(res.text).toMatch(/<div class="hp" aria-hidden="true">[\s\S]*name="website" tabindex="-1" autocomplete="off"/);
    expect(res.text).toContain('<button type="submit">Subscribe</button>');
  });

  it('escapes the list name', async () => {
    const f = await listFixture(ctx.api, { name: '"><script>alert(1)</script>' });
    const res = await open(f.list.key);
    expect(res.text).not.toContain('<script>');
    expect(res.text).toContain('&quot;&gt;&lt;script&gt;');
  });

  it('answers an HTML 404 page for an unknown list key, on GET and POST', async () => {
    const get = await open('no-such-list');
    expect(get.status).toBe(404);
    html(get);
    expect(get.text).toContain('Page not found');
    const post = await submit('no-such-list', { email: address() });
    expect(post.status).toBe(404);
    html(post);
  });
});

describe('the list\'s hosted form: POST /f/<list key>', () => {
  it('runs double opt-in end to end: check-your-inbox page, email on the wire, link confirms', async () => {
    const f = await listFixture(ctx.api, { smtp: sink.url, name: 'Garden Club' });
    const email = address();
    const res = await submit(f.list.key, { email: email.toUpperCase(), name: 'Ada', website: '' });
    expect(res.status).toBe(200);
    html(res);
    expect(res.text).toContain('Check your inbox');
    const row = await f.subscriber(email);
    expect(row).toMatchObject({ status: 'pending', name: 'Ada' });
    const mail = await waitFor(() => sink.to(email)[0], { timeout: 15_000, what: 'the confirmation email' });
    expect(mail.envelope.from).toBe(f.tenant.mailbox.address);
    const token = tokenFrom(mail.parsed.text);
    expect((await request(ctx.api.app).get(`/confirm/${token}`)).status).toBe(200);
    expect((await f.subscriber(email))?.status).toBe('pending');
    expect((await request(ctx.api.app).post(`/confirm/${token}`).type('form').send('')).status).toBe(200);
    expect((await f.subscriber(email))?.status).toBe('active');
    expect(await f.count()).toBe(1);
  });

  it('never reveals whether the address is already on the list: the same page for new, pending, active, gone and suppressed', async () => {
    const f = await listFixture(ctx.api);
    const fresh = await submit(f.list.key, { email: address() });
    const pending = address();
    await f.subscribe({ email: pending });
    const active = address();
    await f.subscribe({ email: active, confirmed: true });
    const gone = address();
    await f.subscribe({ email: gone, confirmed: true });
    await f.unsubscribe({ email: gone });
    const suppressed = address();
    await db().suppression.create({ data: { accountId: f.tenant.account.id, email: suppressed, reason: 'bounced' } });
    for (const email of [pending, active, gone, suppressed]) {
      const res = await submit(f.list.key, { email });
      expect(res.status).toBe(fresh.status);
      expect(res.text).toBe(fresh.text);
    }
    expect((await f.subscriber(active))?.status).toBe('active');
    expect((await f.subscriber(gone))?.status).toBe('unsubscribed');
    expect(await f.subscriber(suppressed)).toBeNull();
    expect(await confirmationMessages(active)).toHaveLength(0);
    expect(await confirmationMessages(suppressed)).toHaveLength(0);
    expect(await confirmationMessages(pending)).toHaveLength(1);
  });

  it('never rewrites what is stored about a person already on the list', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true, name: 'Ada' });
    await submit(f.list.key, { email, name: 'Mallory' });
    expect((await f.subscriber(email))?.name).toBe('Ada');
  });

  it('answers an oversized post with an HTML page, not JSON', async () => {
    const f = await listFixture(ctx.api);
    const res = await submit(f.list.key, { email: address(), name: 'n'.repeat(20_000) });
    expect(res.status).toBe(413);
    html(res);
  });

  it('asks for confirmation even on a list that does not need it through the API', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address();
    await submit(f.list.key, { email });
    expect((await f.subscriber(email))?.status).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(1);
    expect(await f.count()).toBe(0);
  });

  it('stores and sends nothing when the honeypot is filled, yet shows the same page', async () => {
    const f = await listFixture(ctx.api);
    const person = await submit(f.list.key, { email: address(), website: '' });
    const email = address();
    const bot = await submit(f.list.key, { email, name: 'Bot', website: 'http://spam.example' });
    expect(bot.status).toBe(200);
    expect(bot.text).toBe(person.text);
    expect(await f.subscriber(email)).toBeNull();
    expect(await confirmationMessages(email)).toHaveLength(0);
  });

  it('shows the form again with an error and the escaped input for a bad address', async () => {
    const f = await listFixture(ctx.api);
    const res = await submit(f.list.key, { email: '"><script>x</script>', name: '<b>me</b>' });
    expect(res.status).toBe(400);
    html(res);
    expect(res.text).toContain('role="alert"');
    expect(res.text).toContain('Please enter a valid email address');
    expect(res.text).toContain('aria-invalid="true"');
    expect(res.text).not.toContain('<script>');
    expect(res.text).toContain('value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"');
    expect(res.text).toContain('value="&lt;b&gt;me&lt;/b&gt;"');
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(0);
  });

  it('asks for an address when none is given, and refuses a name over 200 characters', async () => {
    const f = await listFixture(ctx.api);
    const empty = await submit(f.list.key, { email: '' });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('Please enter your email address');
    const long = await submit(f.list.key, { email: address(), name: 'n'.repeat(201) });
    expect(long.status).toBe(400);
    expect(long.text).toContain('200 characters');
  });

  it('has its own hourly window: a full form window answers a 429 page, the API is not affected', async () => {
    const f = await listFixture(ctx.api);
    const key = windowKey(f.list.key, 'form');
    const now = Date.now();
    const seed: (string | number)[] = [];
    for (let i = 0; i < 600; i++) seed.push(now - i * 1000, `seed-${i}`);
    await redis().zadd(key, ...seed);
    const email = address();
    const res = await submit(f.list.key, { email });
    expect(res.status).toBe(429);
    html(res);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.text).toContain('Please try again later');
    expect(await f.subscriber(email)).toBeNull();
    expect((await f.subscribe({ email })).body.status).toBe('pending');
  });
});
