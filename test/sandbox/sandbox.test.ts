import { simpleParser } from 'mailparser';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import type { Delivery } from '../webhooks/receiver';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';

/**
 * Test keys (docs/sandbox.md) end to end: the API, the worker's delivery wired with the sandbox as main.ts wires it,
 * the outbox, the dispatcher and a real receiver verifying every webhook with standardwebhooks. The SMTP sink must
 * receive nothing from a test key.
 */
const ctx = useApi();
const sink = useMail({ queues: ['delivery', 'webhook'] });
useDispatcher();
const receiver = useReceiver();

afterAll(() => {
  expect(receiver.deliveries.filter((d) => d.verifiedBy.length === 0)).toEqual([]);
});

/** A tenant with a live key (its own), a test key on the same mailbox, and a webhook for every event. */
async function sandboxTenant(options: { daily_limit?: number } = {}) {
  const tenant = await makeTenant({ smtp: sink.url, daily_limit: options.daily_limit });
  const res = await asAdmin(ctx.api).post('/admin/api/keys').send({ account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'tests', daily_limit: options.daily_limit ?? 1000, mode: 'test' });
  expect(res.status).toBe(201);
  await hook(ctx.api, tenant.account.id, receiver);
  return { tenant, test: res.body.key.token as string, testKeyId: res.body.key.id as number };
}

/** The verified webhooks of a message, in the order of their events' changes, once `types` all arrived. */
async function streamOf(messageId: string, types: string[]): Promise<Delivery[]> {
  await waitFor(() => types.every((t) => receiver.accepted(t, (d) => d.id === messageId).length), { timeout: 25_000, what: `${types.join(', ')} of ${messageId}` });
  const events = await db().event.findMany({ where: { data: { path: ['id'], equals: messageId } }, orderBy: [{ createdAt: 'asc' }] });
  const deliveries = events.map((e) => receiver.accepted(e.type, (d) => d.id === messageId).find((d) => d.id !== undefined)!);
  for (const d of deliveries) expect(d.verifiedBy.length).toBeGreaterThan(0);
  return deliveries;
}

async function untouched(tenant: Tenant, keyId: number) {
  expect(await db().keyDailyUsage.count({ where: { apiKeyId: keyId } })).toBe(0);
  expect(await db().dailyCount.count({ where: { accountId: tenant.account.id } })).toBe(0);
  expect(await db().suppression.count({ where: { accountId: tenant.account.id } })).toBe(0);
  expect(await db().stopEntry.count({ where: { accountId: tenant.account.id } })).toBe(0);
}

describe('test keys', () => {
  it('are made with mode "test" as ms_test_ tokens, and listed with their mode', async () => {
    const { tenant, test } = await sandboxTenant();
    expect(test).toMatch(/^ms_test_[0-9A-Za-z]{32}$/);
    const keys = await asAdmin(ctx.api).get('/admin/api/keys');
    const own = keys.body.keys.filter((k: { account: number }) => k.account === tenant.account.id);
    expect(own.map((k: { mode: string; hint: string }) => [k.mode, k.hint.slice(0, 8)]).sort()).toEqual([['live', expect.stringMatching(/^msk_/)], ['test', 'ms_test_']]);
  });

  it('delivered@ (and any other address): kept in the sandbox, readable raw, message.sent as a live send has it, nothing on the wire, no quota or statistics', async () => {
    const { tenant, test, testKeyId } = await sandboxTenant({ daily_limit: 1 });
    const before = sink.messages.length;
    const res = await as(ctx.api, test).post('/api/v1/send').send({ to: ['delivered+welcome@sandbox.test', 'someone@example.org'], subject: 'Welcome', text: 'Hello from the sandbox', metadata: { user: 7 } });
    expect(res.status).toBe(202);
    const [delivered, other] = res.body.messages as { id: string }[];
    const [sent] = await streamOf(delivered!.id, ['message.sent']);
    await streamOf(other!.id, ['message.sent']);
    // the same event a live send gets, field for field
    const live = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'live@example.org', subject: 'Welcome', text: 'Hello', metadata: { user: 7 } });
    const [liveSent] = await streamOf(live.body.messages[0].id, ['message.sent']);
    expect(Object.keys(sent!.data).sort()).toEqual(Object.keys(liveSent!.data).sort());
    expect(sent!.data).toMatchObject({ id: delivered!.id, send_id: res.body.id, to: 'delivered+welcome@sandbox.test', subject: 'Welcome', status: 'sent', metadata: { user: 7 } });
    // on the wire: the live one only
    expect(sink.messages.slice(before).map((m) => m.envelope.to)).toEqual([['live@example.org']]);
    const raw = await as(ctx.api, test).get(`/api/v1/send/${delivered!.id}/raw`).buffer(true).parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(raw.status).toBe(200);
    expect(raw.headers['content-type']).toMatch(/^message\/rfc822/);
    const parsed = await simpleParser(raw.body as Buffer);
    expect(parsed.subject).toBe('Welcome');
    expect(parsed.text?.trim()).toBe('Hello from the sandbox');
    expect((await as(ctx.api, tenant.token).get(`/api/v1/send/${live.body.id}/raw`)).status).toBe(404);
    // the live key's daily limit of 1 is its own; the test key counted nothing (and had a limit of 1 too)
    expect(await db().keyDailyUsage.count({ where: { apiKeyId: testKeyId } })).toBe(0);
    expect((await as(ctx.api, test).post('/api/v1/send').send({ to: 'delivered@sandbox.test', subject: 'Again', text: 'x' })).status).toBe(202);
  });

  it('bounce@: refused at RCPT as a dead address: message.bounced with the 5.1.1 bounce, no message.sent, nothing suppressed', async () => {
    const { tenant, test, testKeyId } = await sandboxTenant();
    const res = await as(ctx.api, test).post('/api/v1/send').send({ to: 'bounce+signup@sandbox.test', subject: 'Hi', text: 'x' });
    const id = res.body.messages[0].id as string;
    const stream = await streamOf(id, ['message.bounced']);
    expect(stream.map((d) => d.type)).toEqual(['message.bounced']);
    expect(stream[0]!.data).toMatchObject({ id, status: 'bounced', bounce: { class: 'dead', status: '5.1.1', smtp_code: '550', dead: true } });
    const status = await as(ctx.api, test).get(`/api/v1/send/${res.body.id}`);
    expect(status.body.messages[0]).toMatchObject({ status: 'bounced', bounce: { status: '5.1.1', dead: true } });
    await untouched(tenant, testKeyId);
    // the address stays usable in the sandbox
    expect((await as(ctx.api, test).post('/api/v1/send').send({ to: 'bounce+signup@sandbox.test', subject: 'Hi', text: 'x' })).body.skipped).toEqual([]);
  });

  it('soft@: deferred twice on the sandbox schedule (seconds), each attempt recorded, then delivered (a dispatch job\'s rows, then their own jobs)', async () => {
    const { tenant, test, testKeyId } = await sandboxTenant();
    // two copies: one dispatch job first (deliverBatch), then each row's own delivery job for the second deferral
    const res = await as(ctx.api, test).post('/api/v1/send').send({ to: ['soft@sandbox.test', 'soft+2@sandbox.test'], subject: 'Later', text: 'x' });
    const t0 = Date.now();
    for (const { id } of res.body.messages as { id: string }[]) {
      const stream = await streamOf(id, ['message.sent']);
      expect(stream.map((d) => d.type)).toEqual(['message.sent']);
      const attempts = await db().messageAttempt.findMany({ where: { messageId: id }, orderBy: { attempt: 'asc' } });
      expect(attempts.map((a) => [a.attempt, a.outcome, a.response.slice(0, 9)])).toEqual([
        [1, 'deferred', '451 4.2.0'],
        [2, 'deferred', '451 4.2.0'],
      ]);
      expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'sent', attempts: 3 });
    }
    expect(Date.now() - t0).toBeLessThan(20_000);
    await untouched(tenant, testKeyId);
  });

  it('complaint@: delivered, then complained of: message.sent then message.complained, nothing suppressed or stop-listed', async () => {
    const { tenant, test, testKeyId } = await sandboxTenant();
    const res = await as(ctx.api, test).post('/api/v1/send').send({ to: 'complaint@sandbox.test', subject: 'News', text: 'x' });
    const id = res.body.messages[0].id as string;
    const stream = await streamOf(id, ['message.sent', 'message.complained']);
    expect(stream.map((d) => d.type)).toEqual(['message.sent', 'message.complained']);
    expect(stream[1]!.data).toEqual({ id, mailbox: tenant.mailbox.id, to: 'complaint@sandbox.test' });
    await untouched(tenant, testKeyId);
  });

  // as live inbound mail is read (inbound/handle.ts): an answer to a transactional send, not a prospect's, is kind `other`
  it.each([
    ['ooo+trip@sandbox.test', 'other', /^Automatic reply: Order 5$/],
    ['reply@sandbox.test', 'other', /^Re: Order 5$/],
  ])('%s: delivered, then answered in its thread: message.sent then message.received (kind %s) pointing at the message and its send', async (to, kind, subject) => {
    const { tenant, test, testKeyId } = await sandboxTenant();
    const res = await as(ctx.api, test).post('/api/v1/send').send({ to, subject: 'Order 5', text: 'x' });
    const id = res.body.messages[0].id as string;
    await streamOf(id, ['message.sent']);
    const received = await waitFor(() => receiver.accepted('message.received', (d) => (d.in_reply_to as { message?: string })?.message === id)[0], { timeout: 25_000, what: 'message.received' });
    expect(received.verifiedBy.length).toBeGreaterThan(0);
    expect(received.data).toMatchObject({ mailbox: tenant.mailbox.id, kind, from: to, to: tenant.mailbox.address, subject: expect.stringMatching(subject), in_reply_to: { message: id, send: res.body.id } });
    const sent = receiver.accepted('message.sent', (d) => d.id === id)[0]!;
    expect(Number(sent.timestamp)).toBeLessThanOrEqual(Number(received.timestamp));
    expect((await db().event.findMany({ where: { type: 'message.received', accountId: tenant.account.id } })).length).toBe(1);
    await untouched(tenant, testKeyId);
  });

  it('sends batches without counting them, and is refused (403) on the live-only routes, which change nothing', async () => {
    const { tenant, test, testKeyId } = await sandboxTenant({ daily_limit: 1 });
    const batch = await as(ctx.api, test).post('/api/v1/send/batch').send({ messages: [1, 2, 3].map((i) => ({ to: `delivered+${i}@sandbox.test`, subject: `B${i}`, text: 'x' })) });
    expect(batch.status).toBe(200);
    expect(batch.body.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    expect(await db().keyDailyUsage.count({ where: { apiKeyId: testKeyId } })).toBe(0);
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const refusals = [
      await as(ctx.api, test).post('/api/v1/subscribers').send({ list: list.key, email: 'real@example.org' }),
      await as(ctx.api, test).post('/api/v1/subscribers').set('Idempotency-Key', 'sub-1').send({ list: list.key, email: 'real@example.org' }),
      await as(ctx.api, test).get('/api/v1/lists'),
      await as(ctx.api, test).get('/api/v1/inbound'),
    ];
    for (const r of refusals) expect({ status: r.status, body: r.body }).toEqual({ status: 403, body: { ok: false, error: expect.stringMatching(/test key .* send routes only/) } });
    expect(await db().subscriber.count({ where: { listId: list.id } })).toBe(0);
  });
});
