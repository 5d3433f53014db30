import { db } from '../../apps/core/src/db';
import { startIdempotent, requestFingerprint } from '../../apps/core/src/idempotency';
import { maintenanceTasks } from '../../apps/worker/src/processors/maintenance';
import { SEND_ROUTE } from '../../apps/core/src/sending/accept';
import { as, useApi } from '../helpers/api';
import { makeKey, makeTenant, type Tenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });

const post = (token: string, key: string, body: object) => as(ctx.api, token).post('/api/v1/send').set('Idempotency-Key', key).send(body);
const sendsOf = (tenant: Tenant) => db().send.count({ where: { accountId: tenant.account.id } });

describe('Idempotency-Key on POST /api/v1/send', () => {
  it('replays the first answer for the same key and body, with Idempotent-Replayed, and sends nothing again', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'replay@example.org', subject: 'Receipt', text: 'Thanks', metadata: { order: 1, lines: [1, 2] } };
    const first = await post(tenant.token, 'order-1', body);
    expect(first.status).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // same content, keys in another order
    const again = await post(tenant.token, 'order-1', { metadata: { lines: [1, 2], order: 1 }, text: 'Thanks', subject: 'Receipt', to: 'replay@example.org' });
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.headers['ratelimit-limit']).toBeDefined();
    await waitFor(() => sink.to('replay@example.org').length === 1);
    expect(await sendsOf(tenant)).toBe(1);
    expect(sink.to('replay@example.org')).toHaveLength(1);
  });

  it('answers 422 when the key comes back with another body, creating nothing', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    expect((await post(tenant.token, 'k', { to: 'a@example.org', subject: 'One', text: 'x' })).status).toBe(202);
    const other = await post(tenant.token, 'k', { to: 'a@example.org', subject: 'Two', text: 'x' });
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ ok: false, error: expect.stringMatching(/Idempotency-Key/) });
    expect(await sendsOf(tenant)).toBe(1);
  });

  it('answers 409 while the first request with the key is still being processed', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'a@example.org', subject: 'One', text: 'x' };
    // a request that took the key and has not committed yet
    await startIdempotent(db(), { apiKeyId: tenant.keyId, route: SEND_ROUTE, key: 'busy' }, requestFingerprint(body));
    const res = await post(tenant.token, 'busy', body);
    expect(res.status).toBe(409);
    expect(res.body.ok).toBe(false);
    expect(await sendsOf(tenant)).toBe(0);
  });

  it('sends one email when 20 identical requests arrive at once', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'burst@example.org', subject: 'Once', text: 'x' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(tenant.token, 'burst', body)));
    const fresh = answers.filter((r) => r.status === 202 && !r.headers['idempotent-replayed']);
    expect(fresh).toHaveLength(1);
    for (const r of answers) {
      expect([202, 409]).toContain(r.status);
      if (r.status === 202) expect(r.body.id).toBe(fresh[0]!.body.id);
    }
    await waitFor(() => sink.to('burst@example.org').length >= 1);
    expect(await sendsOf(tenant)).toBe(1);
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(1);
    expect((await post(tenant.token, 'burst', body)).headers['idempotent-replayed']).toBe('true');
    expect(sink.to('burst@example.org')).toHaveLength(1);
  });

  it('keeps no record of a refused request, so the same key works once the cause is gone', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'back@example.org', reason: 'complained' } });
    const body = { to: 'back@example.org', subject: 'Hi', text: 'x' };
    expect((await post(tenant.token, 'retry', body)).status).toBe(422);
    await db().suppression.deleteMany({ where: { accountId: tenant.account.id } });
    const res = await post(tenant.token, 'retry', body);
    expect(res.status).toBe(202);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });

  it('scopes keys per API key', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const second = await makeKey(tenant.account.id, tenant.mailbox.id);
    const body = { to: 'a@example.org', subject: 'Hi', text: 'x' };
    const one = await post(tenant.token, 'shared', body);
    const two = await post(second.token, 'shared', body);
    expect([one.status, two.status]).toEqual([202, 202]);
    expect(two.headers['idempotent-replayed']).toBeUndefined();
    expect(two.body.id).not.toBe(one.body.id);
  });

  it('forgets an answer after 24 hours, and the cleanup task deletes expired records', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'a@example.org', subject: 'Hi', text: 'x' };
    const first = await post(tenant.token, 'old', body);
    const record = await db().idempotencyRecord.findUniqueOrThrow({ where: { apiKeyId_route_key: { apiKeyId: tenant.keyId, route: SEND_ROUTE, key: 'old' } } });
    expect(Math.abs(record.expiresAt.getTime() - record.createdAt.getTime() - 24 * 3600 * 1000)).toBeLessThan(1000);
    await db().idempotencyRecord.update({ where: { id: record.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const later = await post(tenant.token, 'old', body);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(later.body.id).not.toBe(first.body.id);

    await db().idempotencyRecord.updateMany({ where: { apiKeyId: tenant.keyId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await maintenanceTasks(db()).cleanup();
    expect(await db().idempotencyRecord.count({ where: { apiKeyId: tenant.keyId } })).toBe(0);
  });

  it('lets a new request take over a key whose first request died before committing', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'a@example.org', subject: 'Hi', text: 'x' };
    await startIdempotent(db(), { apiKeyId: tenant.keyId, route: SEND_ROUTE, key: 'orphan' }, requestFingerprint(body));
    await db().idempotencyRecord.updateMany({ where: { apiKeyId: tenant.keyId }, data: { createdAt: new Date(Date.now() - 120_000) } });
    expect((await post(tenant.token, 'orphan', body)).status).toBe(202);
  });

  it.each([
    ['empty', ''],
    ['over 200 characters', 'k'.repeat(201)],
    ['not printable ASCII', 'clé'],
  ])('answers 400 for an Idempotency-Key that is %s', async (_what, key) => {
    const tenant = await makeTenant({ smtp: sink.url });
    const res = await post(tenant.token, key, { to: 'a@example.org', subject: 'Hi', text: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/Idempotency-Key/);
    expect(await sendsOf(tenant)).toBe(0);
  });
});
