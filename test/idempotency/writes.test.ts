import type { Response } from 'supertest';
import { db } from '../../apps/core/src/db';
import { requestFingerprint, startIdempotent } from '../../apps/core/src/idempotency';
import { as, useApi } from '../helpers/api';
import { makeCampaign, makeKey, makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * docs/idempotency.md: Idempotency-Key on the four writes besides /send, with its rules: replay (same status and body,
 * `Idempotent-Replayed: true`, nothing done again), 422 for another body, one change for 20 identical parallel calls.
 */
const ctx = useApi();

interface Write {
  method: 'post' | 'delete';
  path: string;
  /** a fresh tenant ready for the write; `body` the request, `other` a different one; `changes` counts what it did */
  prepare: (tenant: Tenant) => Promise<{ body: object; other: object; executed: string; changes: () => Promise<number> }>;
}

let n = 0;
const email = (label: string) => `${label}-${Date.now()}-${n++}@example.org`;

/** The entries are named by the idempotency scope of their route. */
const writes: Record<string, Write> = {
  'POST /api/v1/subscribers': {
    method: 'post',
    path: '/api/v1/subscribers',
    prepare: async (tenant) => {
      const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
      const who = email('reader');
      return {
        body: { list: list.key, email: who, name: 'Reader' },
        other: { list: list.key, email: who, name: 'Someone else' },
        // a second add without the key would answer `exists`
        executed: 'active',
        changes: () => db().subscriber.count({ where: { listId: list.id, email: who } }),
      };
    },
  },
  'DELETE /api/v1/subscribers': {
    method: 'delete',
    path: '/api/v1/subscribers',
    prepare: async (tenant) => {
      const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
      const who = email('leaver');
      await as(ctx.api, tenant.token).post('/api/v1/subscribers').send({ list: list.key, email: who });
      const other = email('stranger');
      return {
        body: { list: list.key, email: who },
        other: { list: list.key, email: other },
        // a second delete without the key would answer `gone`
        executed: 'unsubscribed',
        changes: () => db().subscriber.count({ where: { listId: list.id, email: who, status: 'unsubscribed' } }),
      };
    },
  },
  'POST /api/v1/prospects': {
    method: 'post',
    path: '/api/v1/prospects',
    prepare: async (tenant) => {
      const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
      const who = email('editor');
      return {
        body: { campaign: campaign.id, prospects: [{ email: who, name: 'Ed' }] },
        other: { campaign: campaign.id, prospects: [{ email: who, name: 'Edwina' }] },
        // a second add without the key would answer `same`
        executed: 'added',
        changes: () => db().prospect.count({ where: { campaignId: campaign.id, email: who } }),
      };
    },
  },
  'POST /api/v1/prospects/state': {
    method: 'post',
    path: '/api/v1/prospects/state',
    prepare: async (tenant) => {
      const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
      const who = email('partner');
      await as(ctx.api, tenant.token).post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: who }] });
      return {
        body: { campaign: campaign.id, email: who, state: 'agreed', value: 250 },
        other: { campaign: campaign.id, email: who, state: 'lost', reason: 'price' },
        executed: 'agreed',
        changes: () => db().prospect.count({ where: { campaignId: campaign.id, email: who, status: 'agreed', value: 250 } }),
      };
    },
  },
};

/** What the answer says was done, in each write's own words. */
const outcome = (res: Response): string =>
  res.body.status ?? res.body.prospect?.status ?? (res.body.prospects ? res.body.prospects[0].result : undefined);

describe.each(Object.entries(writes))('Idempotency-Key on %s', (name, write) => {
  let tenant: Tenant;
  beforeEach(async () => {
    tenant = await makeTenant({ prospects: true });
  });
  const call = (body: object, key: string | null, token = tenant.token) => {
    const req = as(ctx.api, token)[write.method](write.path);
    return (key === null ? req : req.set('Idempotency-Key', key)).send(body);
  };

  it('replays the first answer with Idempotent-Replayed: true and does nothing again', async () => {
    const { body, executed, changes } = await write.prepare(tenant);
    const first = await call(body, 'retry-1');
    expect(first.status).toBe(200);
    expect(outcome(first)).toBe(executed);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await call({ ...body }, 'retry-1');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await changes()).toBe(1);
    // without the key the same request is a new one, answered as such
    const fresh = await call(body, null);
    expect(fresh.status).toBe(200);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers 422 for the same key with another body, changing nothing', async () => {
    const { body, other, changes } = await write.prepare(tenant);
    expect((await call(body, 'mix-1')).status).toBe(200);
    const before = await changes();
    const mismatch = await call(other, 'mix-1');
    expect(mismatch.status).toBe(422);
    expect(mismatch.body).toEqual({ ok: false, error: expect.stringMatching(/Idempotency-Key/) });
    expect(await changes()).toBe(before);
  });

  it('20 identical parallel calls make one change: one answer executed, the rest replays or 409', async () => {
    const { body, executed, changes } = await write.prepare(tenant);
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(body, 'burst-1')));
    expect(answers.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    const done = answers.filter((r) => r.status === 200);
    expect(done.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    expect(done.every((r) => outcome(r) === executed)).toBe(true);
    expect(await changes()).toBe(1);
    // and once the first has finished, every retry is its replay
    const later = await call(body, 'burst-1');
    expect(later.status).toBe(200);
    expect(later.headers['idempotent-replayed']).toBe('true');
  });

  it('scopes the key per API key and per route; a refusal frees the key', async () => {
    const { body } = await write.prepare(tenant);
    // a refused request (unknown list or campaign: 404) is not remembered: the key then works for the real request
    const refused = await call({ ...body, ...('list' in body ? { list: 'no-such-list' } : { campaign: 999_999 }) }, 'scoped-1');
    expect(refused.status).toBe(404);
    // the same key used first on another route (/send, which shares the implementation) does not collide with this one
    const elsewhere = await as(ctx.api, tenant.token).post('/api/v1/send').set('Idempotency-Key', 'scoped-1').send({ to: email('x'), subject: 'Hi', text: 'Hello' });
    expect(elsewhere.status).toBe(202);
    const mine = await call(body, 'scoped-1');
    expect(mine.status).toBe(200);
    expect(mine.headers['idempotent-replayed']).toBeUndefined();
    // another API key of the account with the same Idempotency-Key is another request
    const { token } = await makeKey(tenant.account.id, tenant.mailbox.id, { prospects: true });
    const other = await call(body, 'scoped-1', token);
    expect(other.status).toBe(200);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers 409 while the first request with the key is still in flight', async () => {
    const { body, changes } = await write.prepare(tenant);
    // the first request has taken the key and not finished (as it looks to a second one arriving meanwhile)
    const route = name.replace('/api/v1', '');
    await startIdempotent(db(), { apiKeyId: tenant.keyId, route, key: 'busy-1' }, requestFingerprint(body));
    const res = await call(body, 'busy-1');
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/still being processed/);
    expect(res.headers['retry-after']).toBe('1');
    expect(await changes()).toBe(0);
  });

  it('takes over a key whose first request died (processing for over 30 s): the retry is executed', async () => {
    const { body, changes } = await write.prepare(tenant);
    const route = name.replace('/api/v1', '');
    const start = await startIdempotent(db(), { apiKeyId: tenant.keyId, route, key: 'dead-1' }, requestFingerprint(body));
    if (start.kind !== 'new') throw new Error('expected a new record');
    await db().$executeRaw`UPDATE idempotency_records SET created_at = now() - interval '31 seconds' WHERE id = ${start.recordId}`;
    const res = await call(body, 'dead-1');
    expect(res.status).toBeLessThan(300);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await changes()).toBe(1);
  });

  it('answers 400 for a malformed Idempotency-Key', async () => {
    const { body, changes } = await write.prepare(tenant);
    const before = await changes();
    const res = await call(body, 'x'.repeat(201));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/Idempotency-Key/);
    expect(await changes()).toBe(before);
  });
});
