import http from 'node:http';
import net from 'node:net';
import request from 'supertest';
import { answerClientErrors } from '../../apps/api/src/middleware/text';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';

/** Inputs that used to reach a fault (500): each is a clear 4xx JSON refusal now, and nothing is written. */
const ctx = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await makeTenant({ prospects: true });
});

const json = (res: request.Response) => expect(res.body).toEqual({ ok: false, error: expect.any(String) });

describe('no body', () => {
  it.each([
    ['post', '/api/v1/prospects'],
    ['post', '/api/v1/prospects/state'],
    ['post', '/api/v1/send'],
    ['post', '/api/v1/subscribers'],
  ])('%s %s answers 400', async (method, path) => {
    const res = await (as(ctx.api, tenant.token) as unknown as Record<string, (p: string) => request.Test>)[method]!(path);
    expect(res.status).toBe(400);
    json(res);
  });

  it.each([
    ['post', '/admin/api/accounts'],
    ['post', '/admin/api/mailboxes'],
    ['post', '/admin/api/keys'],
    ['post', '/admin/api/lists'],
    ['post', '/admin/api/campaigns'],
    ['patch', '/admin/api/campaigns/1'],
  ])('%s %s answers 400', async (method, path) => {
    const res = await (asAdmin(ctx.api) as unknown as Record<string, (p: string) => request.Test>)[method]!(path);
    expect(res.status).toBe(400);
    json(res);
  });
});

describe('bodies that do not decode', () => {
  it.each(['deflate', 'gzip'])('Content-Encoding: %s on a plain body answers 400', async (encoding) => {
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').set('Content-Encoding', encoding).send('{"to":"a@b.c"}');
    expect(res.status).toBe(400);
    json(res);
  });

  it('an admin body that does not inflate answers 400', async () => {
    const res = await asAdmin(ctx.api).post('/admin/api/accounts').set('Content-Type', 'application/json').set('Content-Encoding', 'deflate').send('{"name":"x"}');
    expect(res.status).toBe(400);
    json(res);
  });

  it('an unknown Content-Encoding answers 415', async () => {
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').set('Content-Encoding', 'br2').send('{}');
    expect(res.status).toBe(415);
    json(res);
  });
});

describe('text Postgres cannot store', () => {
  it.each([
    ['a NUL in the subject', { subject: 'a\u0000b' }],
    ['a NUL in a metadata key', { metadata: { 'k\u0000': 'v' } }],
    ['a lone surrogate in metadata', { metadata: { k: 'x\uD800y' } }],
    ['a lone low surrogate in a header', { headers: { 'X-A': '\uDC00' } }],
  ])('%s answers 400 and sends nothing', async (_what, extra) => {
    const before = await db().message.count({ where: { accountId: tenant.account.id } });
    const res = await as(ctx.api, tenant.token)
      .post('/api/v1/send')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ to: 'someone@example.com', subject: 'hi', text: 'hello', ...extra }));
    expect(res.status).toBe(400);
    json(res);
    expect(res.body.error).toMatch(/NUL|surrogate/);
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(before);
  });

  it('a well-formed pair (an emoji) is accepted as text', async () => {
    const res = await asAdmin(ctx.api).post('/admin/api/accounts').send({ name: 'emoji \uD83D\uDE00' });
    expect(res.status).toBe(201);
  });

  it('a NUL in a path answers 400: GET /f/%00', async () => {
    const res = await request(ctx.api.app).get('/f/%00');
    expect(res.status).toBe(400);
  });

  it('a NUL in the form\u2019s name answers 400 and adds nobody', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: true });
    const res = await request(ctx.api.app).post(`/f/${list.key}`).type('form').send('email=nul%40example.com&name=a%00b');
    expect(res.status).toBe(400);
    expect(await db().subscriber.count({ where: { listId: list.id } })).toBe(0);
  });

  it('a bad %-escape in a path answers 400', async () => {
    const res = await asAdmin(ctx.api).patch('/admin/api/campaigns/%E0%A4%A').send({ name: 'x' });
    expect(res.status).toBe(400);
    json(res);
  });

  it('metadata nested 5,000 deep answers 400', async () => {
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const res = await as(ctx.api, tenant.token)
      .post('/api/v1/send')
      .set('Content-Type', 'application/json')
      .send(`{"to":"someone@example.com","subject":"s","text":"t","metadata":${deep}}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/nested deeper than 32/);
  });
});

describe('ids above 2^31-1', () => {
  it('in a path: 400', async () => {
    const res = await asAdmin(ctx.api).patch('/admin/api/campaigns/2147483648').send({ name: 'x' });
    expect(res.status).toBe(400);
    json(res);
    const revoke = await asAdmin(ctx.api).delete('/admin/api/keys/99999999999');
    expect(revoke.status).toBe(400);
  });

  it('in a body: 400', async () => {
    const res = await asAdmin(ctx.api).post('/admin/api/keys').send({ account: 2 ** 31, name: 'k', mailbox: 1, daily_limit: 1 });
    expect(res.status).toBe(400);
    const prospects = await as(ctx.api, tenant.token).post('/api/v1/prospects').send({ campaign: 2 ** 40, prospects: [{ email: 'a@b.co' }] });
    expect(prospects.status).toBe(400);
  });

  it('in a query: 400', async () => {
    const res = await asAdmin(ctx.api).get('/admin/api/messages?account=3000000000');
    expect(res.status).toBe(400);
    const state = await as(ctx.api, tenant.token).get('/api/v1/prospects?campaign=3000000000&email=a@b.co');
    expect(state.status).toBe(400);
    for (const listing of ['/admin/api/inbound?mailbox=3000000000', '/admin/api/inbound?status=held&account=3000000000', '/admin/api/webhooks?account=3000000000']) {
      const refused = await asAdmin(ctx.api).get(listing);
      expect([listing, refused.status, refused.body.error]).toEqual([listing, 400, expect.stringMatching(/mailbox|account/)]);
    }
  });
});

describe('SMTP URLs', () => {
  it.each([
    ['a bad %-escape in the password', 'smtp://user:pa%zzss@127.0.0.1:2525'],
    ['a bad %-escape in the user', 'smtp://us%E0er:pw@127.0.0.1:2525'],
    ['port 0', 'smtp://127.0.0.1:0'],
  ])('%s answers 400 and adds no mailbox', async (_what, smtp) => {
    const before = await db().mailbox.count();
    const res = await asAdmin(ctx.api).post('/admin/api/mailboxes').send({ account: tenant.account.id, address: 'x@example.com', smtp });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/smtp/);
    expect(await db().mailbox.count()).toBe(before);
  });
});

describe('concurrent campaign changes', () => {
  it('10 PATCHes replacing the steps at once all succeed, one after another', async () => {
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        asAdmin(ctx.api)
          .patch(`/admin/api/campaigns/${campaign.id}`)
          .send({ steps: [{ subject: `s${i}`, body: 'b', delay_hours: 0 }, { subject: `t${i}`, body: 'b', delay_hours: 1 }] }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(await db().campaignStep.count({ where: { campaignId: campaign.id } })).toBe(2);
  });
});

describe('oversized headers', () => {
  it('a URL over 16 KB answers a JSON 431', async () => {
    const server = http.createServer(ctx.api.app);
    answerClientErrors(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        socket.write(`GET /healthz?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(1000)}\r\n\r\n`);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 431 /);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({ ok: false, error: expect.stringContaining('16 KB') });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
