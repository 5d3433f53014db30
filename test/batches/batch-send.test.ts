import { db } from '../../apps/core/src/db';
import { createTemplate } from '../../apps/core/src/templates/service';
import { utcDay } from '../../apps/core/src/sending/quota';
import { as, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';

const ctx = useApi();
const batch = (tenant: Tenant, body: unknown, idempotencyKey?: string) => {
  const req = as(ctx.api, tenant.token).post('/api/v1/send/batch');
  return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(body as object);
};
const one = (i: number) => ({ to: `reader${i}@example.org`, subject: `Digest ${i}`, text: `Hello ${i}` });

async function rowsOf(tenant: Tenant) {
  const usage = await db().keyDailyUsage.findUnique({ where: { apiKeyId_day: { apiKeyId: tenant.keyId, day: utcDay() } } });
  return {
    sends: await db().send.count({ where: { accountId: tenant.account.id } }),
    messages: await db().message.count({ where: { accountId: tenant.account.id } }),
    used: usage?.count ?? 0,
  };
}

describe('POST /api/v1/send/batch', () => {
  it('sends the 97 good messages of a batch of 100, names the error of each of the 3 bad ones, in order, and counts 97 once', async () => {
    const tenant = await makeTenant({ daily_limit: 1000 });
    const messages: unknown[] = Array.from({ length: 100 }, (_, i) => one(i));
    messages[3] = { to: 'not an address', subject: 'x', text: 'y' };
    messages[50] = { to: 'fine@example.org', text: 'no subject' };
    messages[99] = { to: 'fine@example.org', subject: 'x', text: 'y', from: 'someone@elsewhere.org' };
    const res = await batch(tenant, { messages });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(res.body.results).toHaveLength(100);
    expect(res.body.results[3]).toEqual({ ok: false, error: expect.stringMatching(/^to/) });
    expect(res.body.results[50]).toEqual({ ok: false, error: 'subject is required' });
    expect(res.body.results[99]).toEqual({ ok: false, error: expect.stringMatching(/^from:/) });
    const good = (res.body.results as { ok: boolean; id: string; messages: { to: string }[] }[]).filter((r, i) => ![3, 50, 99].includes(i));
    expect(good.every((r) => r.ok)).toBe(true);
    // in order: result i is message i's send
    expect(res.body.results[7]).toEqual({ ok: true, id: expect.any(String), status: 'queued', messages: [{ id: expect.any(String), to: 'reader7@example.org', status: 'queued' }], skipped: [] });
    const send7 = await db().send.findUniqueOrThrow({ where: { id: res.body.results[7].id } });
    expect(send7.subject).toBe('Digest 7');
    expect(await rowsOf(tenant)).toEqual({ sends: 97, messages: 97, used: 97 });
    expect(res.headers['ratelimit-remaining']).toBe('903');
  });

  it('refuses 101 messages with 400 and writes nothing', async () => {
    const tenant = await makeTenant();
    const res = await batch(tenant, { messages: Array.from({ length: 101 }, (_, i) => one(i)) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: 'messages: at most 100 messages per batch' });
    expect(await rowsOf(tenant)).toEqual({ sends: 0, messages: 0, used: 0 });
  });

  it.each([
    [{}, 'messages is required'],
    [{ messages: [] }, 'messages: give at least one message'],
    [{ messages: one(1) }, 'messages must be an array'],
    [[one(1)], 'the body must be a JSON object'],
  ])('refuses the malformed batch %j with 400', async (body, error) => {
    const tenant = await makeTenant();
    const res = await batch(tenant, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error });
  });

  it('answers 429 and sends none when the valid messages of a live batch would pass the daily limit', async () => {
    const tenant = await makeTenant({ daily_limit: 5 });
    expect((await batch(tenant, { messages: [one(0), one(1)] })).status).toBe(200);
    const res = await batch(tenant, { messages: [one(2), one(3), { to: 'x' }, { to: ['a@example.org', 'b@example.org'], subject: 's', text: 't' }] });
    expect(res.status).toBe(429);
    expect(res.body.error).toMatch(/daily limit of 5/);
    expect(res.headers['retry-after']).toBeDefined();
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
    // three fit
    const fits = await batch(tenant, { messages: [one(2), { to: ['a@example.org', 'b@example.org'], subject: 's', text: 't' }] });
    expect(fits.status).toBe(200);
    expect(await rowsOf(tenant)).toEqual({ sends: 4, messages: 5, used: 5 });
  });

  it('answers a replayed batch key with the first answer and sends nothing twice; another body with that key is 422', async () => {
    const tenant = await makeTenant();
    const body = { messages: [one(1), one(2), { to: 'bad' }] };
    const first = await batch(tenant, body, 'digest-2026-11-29-batch');
    expect(first.status).toBe(200);
    const again = await batch(tenant, body, 'digest-2026-11-29-batch');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
    const other = await batch(tenant, { messages: [one(3)] }, 'digest-2026-11-29-batch');
    expect(other.status).toBe(422);
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
  });

  it('retried after its process died between the write and the answer, a batch is answered from its messages and sends nothing twice', async () => {
    const tenant = await makeTenant();
    const body = { messages: [one(1), one(2)] };
    const first = await batch(tenant, body, 'batch-whose-answer-was-lost');
    // as if the process died before the batch's own answer was kept: its record is an abandoned `processing` one
    await db().idempotencyRecord.updateMany({
      where: { apiKeyId: tenant.keyId, route: 'POST /send/batch', key: 'batch-whose-answer-was-lost' },
      data: { state: 'processing', responseBody: undefined, createdAt: new Date(Date.now() - 60_000) },
    });
    const retried = await batch(tenant, body, 'batch-whose-answer-was-lost');
    expect(retried.status).toBe(200);
    expect(retried.body.results.map((r: { id: string }) => r.id)).toEqual(first.body.results.map((r: { id: string }) => r.id));
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
  });

  it("replays a message's own idempotency_key, also one first used on POST /send, and refuses it for another message", async () => {
    const tenant = await makeTenant();
    const single = await as(ctx.api, tenant.token).post('/api/v1/send').set('Idempotency-Key', 'welcome-user-42').send(one(42));
    expect(single.status).toBe(202);
    const res = await batch(tenant, {
      messages: [
        { ...one(42), idempotency_key: 'welcome-user-42' },
        { ...one(43), idempotency_key: 'welcome-user-43' },
        { ...one(44), idempotency_key: 'welcome-user-42' },
        { ...one(45), idempotency_key: 'bad\u0001key' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toEqual({ ok: true, id: single.body.id, status: 'queued', messages: single.body.messages, skipped: [] });
    expect(res.body.results[1].ok).toBe(true);
    expect(res.body.results[2]).toEqual({ ok: false, error: 'this Idempotency-Key was already used with a different request' });
    expect(res.body.results[3]).toEqual({ ok: false, error: 'idempotency_key must be 1 to 200 printable ASCII characters' });
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
    const again = await batch(tenant, { messages: [{ ...one(43), idempotency_key: 'welcome-user-43' }] });
    expect(again.body.results[0].id).toBe(res.body.results[1].id);
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
  });

  it('takes attachments and templates as one send does, and names a suppressed-only message', async () => {
    const tenant = await makeTenant();
    await createTemplate(db(), { account: tenant.account.id, kind: 'template', name: 'Digest', alias: 'digest', subject: 'Your digest, {{ name }}', html: '<p>Hi {{ name }}</p>', required: ['name'] });
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@example.org', reason: 'bounced' } });
    const res = await batch(tenant, {
      messages: [
        { to: 'ann@example.org', template: 'digest', variables: { name: 'Ann' } },
        { to: 'bob@example.org', subject: 'Report', text: 'attached', attachments: [{ filename: 'r.txt', content: Buffer.from('numbers').toString('base64') }] },
        { to: 'gone@example.org', subject: 's', text: 't' },
        { to: 'cy@example.org', template: 'digest' },
      ],
    });
    expect(res.status).toBe(200);
    const [ann, bob, gone, cy] = res.body.results;
    expect((await db().send.findUniqueOrThrow({ where: { id: ann.id } })).subject).toBe('Your digest, Ann');
    expect((await db().send.findUniqueOrThrow({ where: { id: bob.id } })).attachments).toEqual([{ filename: 'r.txt', content: Buffer.from('numbers').toString('base64') }]);
    expect(gone).toEqual({ ok: false, error: 'nobody to write to: every recipient is suppressed or on the stop list' });
    expect(cy).toEqual({ ok: false, error: expect.stringMatching(/name/) });
    expect(await rowsOf(tenant)).toEqual({ sends: 2, messages: 2, used: 2 });
  });
});
