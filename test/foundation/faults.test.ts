import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { createDb, type Db } from '../../apps/core/src/db';
import { logger } from '../../apps/core/src/logger';
import { redis } from '../../apps/core/src/redis';

/** An API whose database is unreachable (a closed port): what a caller sees when Postgres goes away. */
describe('when Postgres cannot be reached', () => {
  let unreachable: Db;
  let api: ApiApp;
  beforeAll(async () => {
    unreachable = createDb('postgresql://postgres@127.0.0.1:1/nowhere', 1);
    api = createApp(unreachable);
    await api.start();
    // the process's Redis connection made, as at a real API's start (the first probe would wait for it)
    await redis().ping();
  });
  afterAll(async () => {
    await api.stop();
    await unreachable.$disconnect().catch(() => undefined);
  });

  it('answers /readyz 503 while /healthz still answers 200', async () => {
    const ready = await request(api.app).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ ok: false, error: 'not ready', postgres: false, redis: true });
    expect(ready.headers['retry-after']).toBe('5');
    expect((await request(api.app).get('/healthz')).status).toBe(200);
  });

  it('answers a readiness probe every time in under a second during the outage, with no line per probe', async () => {
    const lines: { level: string; msg: string }[] = [];
    const spies = (['error', 'warn', 'info'] as const).map((level) =>
      jest.spyOn(logger, level).mockImplementation(((_: unknown, msg: string) => void lines.push({ level, msg })) as never),
    );
    try {
      for (let i = 0; i < 10; i++) {
        const started = Date.now();
        const ready = await request(api.app).get('/readyz');
        expect([ready.status, ready.headers['retry-after']]).toEqual([503, '5']);
        expect(Date.now() - started).toBeLessThan(1_000);
      }
    } finally {
      spies.forEach((s) => s.mockRestore());
    }
    // the outage's one warn line at most (the watch may have heard of it before), no access line above debug
    expect(lines.filter((l) => l.level !== 'warn')).toEqual([]);
    expect(lines.length).toBeLessThanOrEqual(1);
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
