import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { runTs } from '../helpers/processes';

/** The webhook admin API of docs/webhooks.md and its CLI. */
const ctx = useApi();
const admin = () => asAdmin(ctx.api);

describe('POST /admin/api/webhooks', () => {
  it('creates an endpoint for every event by default, and shows its secret in this answer only', async () => {
    const account = await makeAccount();
    const res = await admin().post('/admin/api/webhooks').send({ account: account.id, url: 'https://hooks.example.com/in' });
    expect(res.status).toBe(201);
    expect(res.body.webhook).toMatchObject({ id: expect.any(Number), url: 'https://hooks.example.com/in', events: ['*'], enabled: true });
    const secret = res.body.webhook.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);

    const list = await admin().get(`/admin/api/webhooks?account=${account.id}`);
    expect(list.body.webhooks).toEqual([expect.objectContaining({ id: res.body.webhook.id, events: ['*'] })]);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6));
    const patched = await admin().patch(`/admin/api/webhooks/${res.body.webhook.id}`).send({ events: ['message.sent'] });
    expect(patched.body.webhook).toMatchObject({ events: ['message.sent'] });
    expect(patched.body.webhook).not.toHaveProperty('secret');
    // stored encrypted, like mailbox passwords: a database dump alone does not reveal it
    const dump = JSON.stringify(await db().$queryRawUnsafe('SELECT * FROM webhooks'));
    expect(dump).not.toContain(secret.slice(6));
  });

  it.each([
    [{ url: 'ftp://hooks.example.com/in' }, /url/],
    [{ url: 'not a url' }, /url/],
    [{ url: 'https://hooks.example.com/in', events: ['message.sent', 'message.teleported'] }, /unknown event type message\.teleported/],
    [{ url: 'https://hooks.example.com/in', events: [] }, /events/],
    [{ url: 'https://hooks.example.com/in', secret: 'mine' }, /secret/],
  ])('answers 400 for %j and creates nothing', async (body, error) => {
    const account = await makeAccount();
    const res = await admin().post('/admin/api/webhooks').send({ account: account.id, ...body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(error) });
    expect(await db().webhook.count({ where: { accountId: account.id } })).toBe(0);
  });

  it('answers 404 for an unknown account', async () => {
    const res = await admin().post('/admin/api/webhooks').send({ account: 999_999, url: 'https://hooks.example.com/in' });
    expect(res.status).toBe(404);
  });

  it('needs the admin token', async () => {
    const res = await (await import('supertest')).default(ctx.api.app).get('/admin/api/webhooks');
    expect(res.status).toBe(401);
  });
});

describe('PATCH, rotate, DELETE, deliveries', () => {
  it('changes url, events and enabled; refuses an unknown event name or an empty change', async () => {
    const account = await makeAccount();
    const { body } = await admin().post('/admin/api/webhooks').send({ account: account.id, url: 'http://127.0.0.1:9/x', events: ['message.sent'] });
    const id = body.webhook.id as number;
    const res = await admin().patch(`/admin/api/webhooks/${id}`).send({ url: 'http://10.0.0.5/hook', events: ['*'], enabled: false });
    expect(res.status).toBe(200);
    expect(res.body.webhook).toMatchObject({ id, url: 'http://10.0.0.5/hook', events: ['*'], enabled: false });
    expect((await admin().patch(`/admin/api/webhooks/${id}`).send({ events: ['nope'] })).status).toBe(400);
    expect((await admin().patch(`/admin/api/webhooks/${id}`).send({})).status).toBe(400);
    expect((await admin().patch('/admin/api/webhooks/999999').send({ enabled: true })).status).toBe(404);
  });

  it('rotates to a new secret shown once, keeping the old one for 24 hours', async () => {
    const account = await makeAccount();
    const { body } = await admin().post('/admin/api/webhooks').send({ account: account.id, url: 'http://127.0.0.1:9/x' });
    const before = await db().webhook.findUniqueOrThrow({ where: { id: body.webhook.id } });
    const res = await admin().post(`/admin/api/webhooks/${body.webhook.id}/rotate`);
    expect(res.status).toBe(200);
    expect(res.body.webhook.secret).toMatch(/^whsec_/);
    expect(res.body.webhook.secret).not.toBe(body.webhook.secret);
    const row = await db().webhook.findUniqueOrThrow({ where: { id: body.webhook.id } });
    expect(row.previousSecretEnc).toBe(before.secretEnc);
    expect(row.secretEnc).not.toBe(before.secretEnc);
    expect((row.previousUntil!.getTime() - Date.now()) / 3600_000).toBeCloseTo(24, 1);
  });

  it('deletes an endpoint; its deliveries are then unknown', async () => {
    const account = await makeAccount();
    const { body } = await admin().post('/admin/api/webhooks').send({ account: account.id, url: 'http://127.0.0.1:9/x' });
    const id = body.webhook.id as number;
    expect((await admin().get(`/admin/api/webhooks/${id}/deliveries`)).body).toEqual({ ok: true, deliveries: [] });
    expect((await admin().get(`/admin/api/webhooks/${id}/deliveries?limit=0`)).status).toBe(400);
    expect((await admin().delete(`/admin/api/webhooks/${id}`)).body).toEqual({ ok: true });
    expect((await admin().delete(`/admin/api/webhooks/${id}`)).status).toBe(404);
    expect((await admin().get(`/admin/api/webhooks/${id}/deliveries`)).status).toBe(404);
  });
});

describe('npm run admin -- webhook', () => {
  it('creates (printing the secret once), lists without it, and refuses an unknown event name', async () => {
    const account = await makeAccount();
    const create = runTs('scripts/admin.ts', ['webhook', 'create', '--account', String(account.id), '--url', 'https://hooks.example.com/cli', '--events', 'message.sent,message.bounced']);
    expect(await create.exited).toBe(0);
    const created = JSON.parse(create.stdout());
    expect(created.webhook).toMatchObject({ url: 'https://hooks.example.com/cli', events: ['message.sent', 'message.bounced'] });
    expect(created.webhook.secret).toMatch(/^whsec_/);
    const list = runTs('scripts/admin.ts', ['webhook', 'list', '--account', String(account.id)]);
    expect(await list.exited).toBe(0);
    expect(JSON.parse(list.stdout()).webhooks).toEqual([expect.objectContaining({ id: created.webhook.id })]);
    expect(list.stdout()).not.toContain(created.webhook.secret.slice(6));
    const bad = runTs('scripts/admin.ts', ['webhook', 'create', '--account', String(account.id), '--url', 'https://x.example', '--events', 'message.teleported']);
    expect(await bad.exited).toBe(1);
    expect(bad.stderr()).toMatch(/unknown event type/);
  }, 60_000);
});
