import { db } from '../../apps/core/src/db';
import { secondsToNextUtcMidnight, utcDay } from '../../apps/core/src/sending/quota';
import { as, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';

const ctx = useApi();
const send = (tenant: Tenant, to: string[], extra: object = {}) =>
  as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 'Hi', text: 'x', ...extra });
const addresses = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.org`);

describe('daily limit per key (recipient copies per UTC day)', () => {
  it('tells the limit, what is left and the seconds to the next UTC midnight on every send answer', async () => {
    const tenant = await makeTenant({ daily_limit: 3 });
    const res = await send(tenant, addresses('a', 2));
    expect(res.status).toBe(202);
    expect(res.headers['ratelimit-limit']).toBe('3');
    expect(res.headers['ratelimit-remaining']).toBe('1');
    const reset = Number(res.headers['ratelimit-reset']);
    expect(Math.abs(reset - secondsToNextUtcMidnight())).toBeLessThanOrEqual(2);
    const refused = await send(tenant, ['not-an-address']);
    expect(refused.status).toBe(400);
    expect(refused.headers['ratelimit-remaining']).toBe('1');
  });

  it('refuses with 429 and Retry-After a request that would pass the limit, all or nothing, then takes one that fits', async () => {
    const tenant = await makeTenant({ daily_limit: 3 });
    expect((await send(tenant, addresses('a', 2))).status).toBe(202);
    const over = await send(tenant, addresses('b', 2));
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ ok: false, error: expect.stringMatching(/daily limit of 3/) });
    expect(Math.abs(Number(over.headers['retry-after']) - secondsToNextUtcMidnight())).toBeLessThanOrEqual(2);
    expect(over.headers['ratelimit-remaining']).toBe('1');
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(2);
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(1);

    const last = await send(tenant, ['c@example.org']);
    expect(last.status).toBe(202);
    expect(last.headers['ratelimit-remaining']).toBe('0');
    expect((await send(tenant, ['d@example.org'])).status).toBe(429);
  });

  it('refuses a single request larger than the whole limit', async () => {
    const tenant = await makeTenant({ daily_limit: 2 });
    expect((await send(tenant, addresses('a', 3))).status).toBe(429);
    expect(await db().keyDailyUsage.count({ where: { apiKeyId: tenant.keyId } })).toBe(0);
  });

  it('does not count skipped recipients', async () => {
    const tenant = await makeTenant({ daily_limit: 1 });
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@example.org', reason: 'bounced' } });
    const res = await send(tenant, ['gone@example.org', 'here@example.org']);
    expect(res.status).toBe(202);
    expect(res.headers['ratelimit-remaining']).toBe('0');
  });

  it('starts again on a new UTC day', async () => {
    const tenant = await makeTenant({ daily_limit: 1 });
    const yesterday = new Date(utcDay().getTime() - 86_400_000);
    await db().keyDailyUsage.create({ data: { apiKeyId: tenant.keyId, day: yesterday, count: 1 } });
    expect((await send(tenant, ['a@example.org'])).status).toBe(202);
  });

  it('never overshoots under 50 parallel requests', async () => {
    const tenant = await makeTenant({ daily_limit: 25 });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(tenant, addresses(`p${i}-`, 2))));
    const accepted = answers.filter((r) => r.status === 202);
    expect(answers.filter((r) => r.status !== 202).every((r) => r.status === 429)).toBe(true);
    // pairs: 12 fit into 25, the 13th would pass it
    expect(accepted).toHaveLength(12);
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(24);
    const usage = await db().keyDailyUsage.findUniqueOrThrow({ where: { apiKeyId_day: { apiKeyId: tenant.keyId, day: utcDay() } } });
    expect(usage.count).toBe(24);
  });
});
