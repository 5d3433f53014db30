import request from 'supertest';
import { config } from '../../apps/core/src/config';
import { decryptSecret } from '../../apps/core/src/crypto';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, as, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox } from '../helpers/factories';

const ctx = useApi();
const admin = () => asAdmin(ctx.api);

async function accountWithMailbox() {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  return { account, mailbox };
}

describe('admin API authentication', () => {
  it('answers 401 without the admin token', async () => {
    const res = await request(ctx.api.app).post('/admin/api/accounts').send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('missing') });
  });

  it('answers 401 with a wrong admin token and creates nothing', async () => {
    const before = await db().account.count();
    const res = await as(ctx.api, 'wrong-token-wrong-token').post('/admin/api/accounts').send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/wrong/);
    expect(await db().account.count()).toBe(before);
  });

  it('does not accept an API key as the admin token', async () => {
    const res = await as(ctx.api, 'msk_' + 'a'.repeat(32)).get('/admin/api/messages');
    expect(res.status).toBe(401);
  });
});

describe('POST /admin/api/accounts', () => {
  it('creates an account', async () => {
    const res = await admin().post('/admin/api/accounts').send({ name: 'Acme' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ ok: true, account: { id: expect.any(Number), name: 'Acme' } });
  });

  it('refuses a missing name with 400 naming the field', async () => {
    const res = await admin().post('/admin/api/accounts').send({});
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('name') });
  });
});

describe('POST /admin/api/mailboxes', () => {
  it('creates a mailbox with defaults and never echoes the password', async () => {
    const account = await makeAccount();
    const res = await admin()
      .post('/admin/api/mailboxes')
      .send({ account: account.id, address: 'Sales@Example.com', smtp: 'smtps://sales%40example.com:s3cr%3At-pw@smtp.example.com' });
    expect(res.status).toBe(201);
    expect(res.body.mailbox).toMatchObject({
      id: expect.any(Number),
      address: 'sales@example.com',
      daily_limit: 50,
      gap_seconds: 60,
      smtp: { host: 'smtp.example.com', port: 465, secure: true, user: 'sales@example.com' },
    });
    expect(JSON.stringify(res.body)).not.toContain('s3cr');
  });

  it('keeps the password encrypted at rest: not in the row in clear, but recoverable with SECRET_KEY', async () => {
    const account = await makeAccount();
    const password = 'pa55-Unique-7f3e9a';
    const res = await admin()
      .post('/admin/api/mailboxes')
      .send({ account: account.id, address: 'a@example.com', smtp: `smtp://user:${password}@127.0.0.1:2525`, daily_limit: 10, gap_seconds: 0 });
    expect(res.status).toBe(201);
    const dump = JSON.stringify(await db().$queryRawUnsafe('SELECT * FROM mailboxes'));
    expect(dump).not.toContain(password);
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: res.body.mailbox.id } });
    expect(row.smtpPasswordEnc).toMatch(/^v1:/);
    expect(decryptSecret(row.smtpPasswordEnc, config().secretKey)).toBe(password);
    expect(res.body.mailbox).toMatchObject({ daily_limit: 10, gap_seconds: 0 });
  });

  it.each([
    ['a missing smtp', { address: 'a@example.com' }, /smtp/],
    ['a bad SMTP URL', { address: 'a@example.com', smtp: 'http://host' }, /smtp:\/\/ or smtps:\/\//],
    ['an unparseable SMTP URL', { address: 'a@example.com', smtp: 'not a url' }, /smtp must be a URL/],
    ['a bad address', { address: 'nope', smtp: 'smtp://h:25' }, /address/],
    ['a negative daily limit', { address: 'a@example.com', smtp: 'smtp://h:25', daily_limit: -1 }, /daily_limit/],
  ])('answers 400 for %s', async (_what, body, error) => {
    const account = await makeAccount();
    const res = await admin().post('/admin/api/mailboxes').send({ account: account.id, ...body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(error);
    expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(0);
  });

  it('answers 404 for an unknown account', async () => {
    const res = await admin().post('/admin/api/mailboxes').send({ account: 999999, address: 'a@example.com', smtp: 'smtp://h:25' });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/account/);
  });

  it('answers 409 for a second mailbox with the same address in the account', async () => {
    const account = await makeAccount();
    const body = { account: account.id, address: 'same@example.com', smtp: 'smtp://h:25' };
    expect((await admin().post('/admin/api/mailboxes').send(body)).status).toBe(201);
    expect((await admin().post('/admin/api/mailboxes').send(body)).status).toBe(409);
  });
});

describe('POST /admin/api/keys and DELETE /admin/api/keys/:id', () => {
  it('creates a key whose token appears in this answer only', async () => {
    const { account, mailbox } = await accountWithMailbox();
    const res = await admin()
      .post('/admin/api/keys')
      .send({ account: account.id, name: 'shop.example.com', mailbox: mailbox.id, daily_limit: 500, prospects: true });
    expect(res.status).toBe(201);
    expect(res.body.key).toMatchObject({ id: expect.any(Number), name: 'shop.example.com', mailbox: mailbox.id, daily_limit: 500, prospects: true });
    expect(res.body.key.token).toMatch(/^msk_[0-9A-Za-z]{32}$/);
    const listed = await admin().get('/admin/api/keys');
    expect(JSON.stringify(listed.body)).not.toContain(res.body.key.token);
    expect(listed.body.keys.find((k: { id: number }) => k.id === res.body.key.id).hint).toBe(
      `${res.body.key.token.slice(0, 8)}…${res.body.key.token.slice(-4)}`,
    );
  });

  it('answers 404 when the mailbox belongs to another account (the creator must be allowed to send from it)', async () => {
    const mine = await accountWithMailbox();
    const theirs = await accountWithMailbox();
    const res = await admin()
      .post('/admin/api/keys')
      .send({ account: mine.account.id, name: 'k', mailbox: theirs.mailbox.id, daily_limit: 10 });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/mailbox/);
  });

  it('answers 400 for missing fields and 404 for an unknown account', async () => {
    const { mailbox } = await accountWithMailbox();
    expect((await admin().post('/admin/api/keys').send({ name: 'k' })).status).toBe(400);
    const res = await admin().post('/admin/api/keys').send({ account: 999999, name: 'k', mailbox: mailbox.id, daily_limit: 1 });
    expect(res.status).toBe(404);
  });

  it('revokes a key, and answers 404 for an unknown key and 400 for a bad id', async () => {
    const { account, mailbox } = await accountWithMailbox();
    const created = await admin().post('/admin/api/keys').send({ account: account.id, name: 'k', mailbox: mailbox.id, daily_limit: 1 });
    const res = await admin().delete(`/admin/api/keys/${created.body.key.id}`);
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(res.body.key.revoked_at).toEqual(expect.any(String));
    expect((await admin().delete('/admin/api/keys/999999')).status).toBe(404);
    expect((await admin().delete('/admin/api/keys/abc')).status).toBe(400);
  });
});

describe('POST /admin/api/lists', () => {
  it('creates a list', async () => {
    const { account, mailbox } = await accountWithMailbox();
    const res = await admin().post('/admin/api/lists').send({ account: account.id, name: 'News', confirm: true, mailbox: mailbox.id });
    expect(res.status).toBe(201);
    expect(res.body.list).toMatchObject({ key: expect.stringMatching(/^[0-9A-Za-z]{20}$/), name: 'News', confirm: true, subscribers: 0 });
  });

  it('answers 400 without confirm and 404 for an unknown mailbox', async () => {
    const { account } = await accountWithMailbox();
    expect((await admin().post('/admin/api/lists').send({ account: account.id, name: 'News', mailbox: 1 })).status).toBe(400);
    const res = await admin().post('/admin/api/lists').send({ account: account.id, name: 'News', confirm: false, mailbox: 999999 });
    expect(res.status).toBe(404);
  });
});

describe('POST and PATCH /admin/api/campaigns', () => {
  const steps = [
    { subject: 'Hi {{name}}', body: 'Hello', delay_hours: 0 },
    { subject: 'Again', body: 'Ping', delay_hours: 0.5 },
  ];

  it('creates a campaign with its steps, then changes it', async () => {
    const { account, mailbox } = await accountWithMailbox();
    const res = await admin()
      .post('/admin/api/campaigns')
      .send({ account: account.id, name: 'Links Q4', goal: 'links', mailbox: mailbox.id, stages: ['found', 'talking', 'won'], steps });
    expect(res.status).toBe(201);
    expect(res.body.campaign).toMatchObject({ id: expect.any(Number), name: 'Links Q4', goal: 'links', status: 'draft', prospects: 0, stages: ['found', 'talking', 'won'], steps });
    const patched = await admin().patch(`/admin/api/campaigns/${res.body.campaign.id}`).send({ name: 'Links Q1' });
    expect(patched.status).toBe(200);
    expect(patched.body.campaign).toMatchObject({ name: 'Links Q1' });
  });

  it.each([
    ['an unknown goal', { goal: 'fame' }, /goal/],
    ['no steps', { steps: [] }, /steps/],
    ['a negative delay', { steps: [{ subject: 's', body: 'b', delay_hours: -1 }] }, /delay_hours/],
  ])('answers 400 for %s', async (_what, change, error) => {
    const { account, mailbox } = await accountWithMailbox();
    const res = await admin()
      .post('/admin/api/campaigns')
      .send({ account: account.id, name: 'c', goal: 'sales', mailbox: mailbox.id, steps, ...change });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(error);
  });

  it('answers 404 for PATCH of an unknown campaign and 400 for an empty or bad change', async () => {
    expect((await admin().patch('/admin/api/campaigns/999999').send({ status: 'paused' })).status).toBe(404);
    const { account, mailbox } = await accountWithMailbox();
    const created = await admin().post('/admin/api/campaigns').send({ account: account.id, name: 'c', goal: 'sales', mailbox: mailbox.id, steps });
    expect((await admin().patch(`/admin/api/campaigns/${created.body.campaign.id}`).send({})).status).toBe(400);
    expect((await admin().patch(`/admin/api/campaigns/${created.body.campaign.id}`).send({ status: 'done' })).status).toBe(400);
  });
});

describe('GET /admin/api/messages', () => {
  it('lists messages newest first, filtered by recipient', async () => {
    const { account, mailbox } = await accountWithMailbox();
    for (const [i, to] of ['x@example.com', 'y@example.com', 'x@example.com'].entries()) {
      await db().message.create({
        data: {
          id: crypto.randomUUID(),
          accountId: account.id,
          mailboxId: mailbox.id,
          kind: 'transactional',
          to,
          subject: `s${i}`,
          messageIdHeader: `<${crypto.randomUUID()}@example.com>`,
          createdAt: new Date(Date.now() + i * 1000),
        },
      });
    }
    const res = await admin().get('/admin/api/messages?to=x@example.com&limit=10');
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: { subject: string }) => m.subject)).toEqual(['s2', 's0']);
    expect(res.body.messages[0]).toMatchObject({ to: 'x@example.com', status: 'queued' });
    expect((await admin().get('/admin/api/messages?limit=0')).status).toBe(400);
  });
});

describe('the queue dashboard', () => {
  it('asks for credentials without the token', async () => {
    const res = await request(ctx.api.app).get('/admin/queues');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic/);
  });

  it('serves bull-board with the token as bearer or as the basic-auth password', async () => {
    const bearer = await request(ctx.api.app).get('/admin/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(bearer.status).toBe(200);
    expect(bearer.text).toMatch(/<html/i);
    const basic = await request(ctx.api.app).get('/admin/queues/api/queues').auth('admin', ADMIN_TOKEN);
    expect(basic.status).toBe(200);
    expect(basic.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(['broadcast', 'delivery', 'imports', 'links', 'maintenance', 'sequence', 'webhook']);
  });
});
