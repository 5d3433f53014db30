import { db } from '../../apps/core/src/db';
import { as, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';

const ctx = useApi();
const send = (tenant: Tenant, to: string[]) => as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 'Hi', text: 'x' });

describe('suppressed and stop-listed recipients', () => {
  it('skips bounced, complained and stop-listed addresses and stop-listed domains, naming each with its reason', async () => {
    const tenant = await makeTenant();
    const accountId = tenant.account.id;
    await db().suppression.createMany({
      data: [
        { accountId, email: 'bounced@example.org', reason: 'bounced' },
        { accountId, email: 'complained@example.org', reason: 'complained' },
      ],
    });
    await db().stopEntry.createMany({
      data: [
        { accountId, value: 'stopped@example.org', kind: 'email' },
        { accountId, value: 'blocked.example', kind: 'domain' },
      ],
    });
    const res = await send(tenant, ['Bounced@example.org', 'ok@example.org', 'complained@example.org', 'stopped@example.org', 'anyone@blocked.example', 'sales@eu.blocked.example', 'x@notblocked.example']);
    expect(res.status).toBe(202);
    expect(res.body.messages).toEqual([
      { id: expect.any(String), to: 'ok@example.org', status: 'queued' },
      { id: expect.any(String), to: 'x@notblocked.example', status: 'queued' },
    ]);
    expect(res.body.skipped).toEqual([
      { to: 'bounced@example.org', reason: 'bounced' },
      { to: 'complained@example.org', reason: 'complained' },
      { to: 'stopped@example.org', reason: 'stopped' },
      { to: 'anyone@blocked.example', reason: 'stopped' },
      // a stop-listed domain covers its subdomains, as it does for prospects
      { to: 'sales@eu.blocked.example', reason: 'stopped' },
    ]);
    const again = await as(ctx.api, tenant.token).get(`/api/v1/send/${res.body.id}`);
    expect(again.body.skipped).toEqual(res.body.skipped);
  });

  it('answers 422 and creates nothing when every recipient is skipped', async () => {
    const tenant = await makeTenant();
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'bounced@example.org', reason: 'bounced' } });
    await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'stopped@example.org' } });
    const res = await send(tenant, ['bounced@example.org', 'stopped@example.org']);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/nobody to write to/) });
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
    expect(await db().keyDailyUsage.count({ where: { apiKeyId: tenant.keyId } })).toBe(0);
  });

  it("ignores another account's suppression list", async () => {
    const tenant = await makeTenant();
    const other = await makeTenant();
    await db().suppression.create({ data: { accountId: other.account.id, email: 'bounced@example.org', reason: 'bounced' } });
    const res = await send(tenant, ['bounced@example.org']);
    expect(res.status).toBe(202);
    expect(res.body.skipped).toEqual([]);
  });
});
