import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { sha256 } from '../../apps/core/src/crypto';
import { createApp } from '../../apps/api/src/app';
import { createRedis } from '../../apps/core/src/redis';
import { acknowledgeRevocation, parseRevocation, revocationChannel } from '../../apps/core/src/auth/keys';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';

const ctx = useApi();

describe('public API authentication (docs/api.md)', () => {
  it('answers 401 with a JSON refusal when the Authorization header is missing', async () => {
    const res = await request(ctx.api.app).get('/api/v1/lists');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/missing/) });
  });

  it('answers 401 when the header is not a Bearer token', async () => {
    const res = await request(ctx.api.app).get('/api/v1/lists').set('Authorization', 'Basic Zm9vOmJhcg==');
    expect(res.status).toBe(401);
    expect(res.body.ok).toBe(false);
  });

  it('answers 401 for a malformed key', async () => {
    const res = await as(ctx.api, 'not-a-key').get('/api/v1/lists');
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/unknown or revoked/);
  });

  it('answers 401 for a well-formed key that does not exist', async () => {
    const res = await as(ctx.api, 'msk_' + 'A'.repeat(32)).get('/api/v1/lists');
    expect(res.status).toBe(401);
  });

  it('lets a live key through', async () => {
    const tenant = await makeTenant();
    const res = await as(ctx.api, tenant.token).get('/api/v1/no-such-thing');
    // authenticated, then the route is unknown
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('no route') });
  });

  it('stores only the SHA-256 fingerprint of a key, never the key', async () => {
    const tenant = await makeTenant();
    expect(tenant.token).toMatch(/^msk_[0-9A-Za-z]{32}$/);
    const row = await db().apiKey.findUniqueOrThrow({ where: { id: tenant.keyId } });
    expect(row.fingerprint).toBe(sha256(tenant.token));
    const dump = JSON.stringify(await db().$queryRawUnsafe('SELECT * FROM api_keys'));
    expect(dump).not.toContain(tenant.token);
  });

  it('answers 401 right after revocation', async () => {
    const tenant = await makeTenant();
    expect((await as(ctx.api, tenant.token).get('/api/v1/nowhere')).status).toBe(404);
    const revoked = await asAdmin(ctx.api).delete(`/admin/api/keys/${tenant.keyId}`);
    expect(revoked.status).toBe(200);
    const res = await as(ctx.api, tenant.token).get('/api/v1/nowhere');
    expect(res.status).toBe(401);
  });

  it('revocation takes effect at once on another API process with a warm cache', async () => {
    const other = createApp(db());
    await other.start();
    try {
      const tenant = await makeTenant();
      // warm both caches
      expect((await as(ctx.api, tenant.token).get('/api/v1/nowhere')).status).toBe(404);
      expect((await as(other, tenant.token).get('/api/v1/nowhere')).status).toBe(404);
      expect((await asAdmin(ctx.api).delete(`/admin/api/keys/${tenant.keyId}`)).status).toBe(200);
      const res = await as(other, tenant.token).get('/api/v1/nowhere');
      expect(res.status).toBe(401);
    } finally {
      await other.stop();
    }
  });

  it('a revocation answers only once every subscribed process has dropped the key (a slow one included)', async () => {
    // a stand-in for an API process whose event loop reads the announcement 300 ms late
    const slow = createRedis({ maxRetriesPerRequest: null });
    const heard: string[] = [];
    const timers: NodeJS.Timeout[] = [];
    slow.on('message', (_channel, message: string) => {
      heard.push(message);
      const { acks } = parseRevocation(message);
      timers.push(setTimeout(() => void acknowledgeRevocation(acks!), 300));
    });
    await slow.subscribe(revocationChannel());
    try {
      const tenant = await makeTenant();
      const started = Date.now();
      expect((await asAdmin(ctx.api).delete(`/admin/api/keys/${tenant.keyId}`)).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(heard.map((m) => parseRevocation(m).fingerprint)).toEqual([sha256(tenant.token)]);
    } finally {
      timers.forEach(clearTimeout);
      await slow.quit();
    }
  });

  it('a process that never acknowledges delays a revocation by at most 2 s, and the key is revoked', async () => {
    const deaf = createRedis({ maxRetriesPerRequest: null });
    await deaf.subscribe(revocationChannel());
    try {
      const tenant = await makeTenant();
      const started = Date.now();
      expect((await asAdmin(ctx.api).delete(`/admin/api/keys/${tenant.keyId}`)).status).toBe(200);
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(2_000);
      expect(took).toBeLessThan(4_000);
      expect((await as(ctx.api, tenant.token).get('/api/v1/nowhere')).status).toBe(401);
    } finally {
      await deaf.quit();
    }
  });

  it('records last use without a write per request', async () => {
    const tenant = await makeTenant();
    for (let i = 0; i < 5; i++) await as(ctx.api, tenant.token).get('/api/v1/nowhere');
    const row = await waitFor(() =>
      db().apiKey.findUniqueOrThrow({ where: { id: tenant.keyId } }).then((k) => (k.lastUsedAt ? k : null)),
    );
    const first = row.lastUsedAt!.getTime();
    for (let i = 0; i < 5; i++) await as(ctx.api, tenant.token).get('/api/v1/nowhere');
    const again = await db().apiKey.findUniqueOrThrow({ where: { id: tenant.keyId } });
    expect(again.lastUsedAt!.getTime()).toBe(first);
  });
});

describe('the prospects permission', () => {
  it.each(['/api/v1/campaigns', '/api/v1/prospects?campaign=1&email=a@example.com'])('answers 403 on GET %s for a key without it', async (path) => {
    const tenant = await makeTenant({ prospects: false });
    const res = await as(ctx.api, tenant.token).get(path);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('prospects permission') });
  });

  it.each(['/api/v1/prospects', '/api/v1/prospects/state'])('answers 403 on POST %s for a key without it', async (path) => {
    const tenant = await makeTenant({ prospects: false });
    const res = await as(ctx.api, tenant.token).post(path).send({ campaign: 1, email: 'a@example.com', state: 'agreed', prospects: [] });
    expect(res.status).toBe(403);
  });

  it('answers 401, not 403, when the key is missing', async () => {
    expect((await request(ctx.api.app).get('/api/v1/campaigns')).status).toBe(401);
  });

  it('lets a key with the permission through the guard', async () => {
    const tenant = await makeTenant({ prospects: true });
    const res = await as(ctx.api, tenant.token).get('/api/v1/campaigns/nowhere/at/all');
    expect(res.status).toBe(404);
  });
});

describe('refusals are JSON', () => {
  it('answers 404 JSON for an unknown route without a key', async () => {
    const res = await request(ctx.api.app).get('/nope');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/json/);
    expect(res.body.ok).toBe(false);
  });

  it('answers 400 for malformed JSON', async () => {
    const tenant = await makeTenant();
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').send('{"to": ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: 'the body is not valid JSON' });
  });

  it('answers 413 for a body of 1.1 MB', async () => {
    const tenant = await makeTenant();
    const big = JSON.stringify({ subject: 'x', text: 'a'.repeat(1.1 * 1024 * 1024) });
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').send(big);
    expect(res.status).toBe(413);
    expect(res.body.ok).toBe(false);
  });

  it('answers /healthz and /readyz', async () => {
    expect((await request(ctx.api.app).get('/healthz')).body).toEqual({ ok: true });
    const ready = await request(ctx.api.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.ok).toBe(true);
  });
});
