import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { createDb, type Db } from '../../apps/core/src/db';

/** An API whose database is unreachable (a closed port): what a caller sees when Postgres goes away. */
describe('when Postgres cannot be reached', () => {
  let unreachable: Db;
  let api: ApiApp;
  beforeAll(async () => {
    unreachable = createDb('postgresql://postgres@127.0.0.1:1/nowhere', 1);
    api = createApp(unreachable);
    await api.start();
  });
  afterAll(async () => {
    await api.stop();
    await unreachable.$disconnect().catch(() => undefined);
  });

  it('answers /readyz 503 while /healthz still answers 200', async () => {
    const ready = await request(api.app).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ ok: false, error: 'not ready', postgres: false, redis: true });
    expect((await request(api.app).get('/healthz')).status).toBe(200);
  });

  it('answers 503 with Retry-After (the request may be repeated as it is), never the detail', async () => {
    const res = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${'A'.repeat(32)}`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/unavailable/) });
    expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|prisma/i);
  });

  it('keeps the caller\'s X-Request-Id when it is sane', async () => {
    const res = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${'A'.repeat(32)}`).set('X-Request-Id', 'trace-42');
    expect(res.headers['x-request-id']).toBe('trace-42');
    expect(res.status).toBe(503);
  });
});
