import { db } from '../../apps/core/src/db';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { createDelivery } from '../../apps/core/src/delivery/deliver';
import { PayloadTooLarge } from '../../apps/core/src/errors';
import { parseSendRequest } from '../../apps/core/src/sending/schema';
import { DISPATCH, QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { deliveryProcessor } from '../../apps/worker/src/processors/delivery';
import { as, useApi } from '../helpers/api';
import { waitFor } from '../helpers/wait';
import { makeTenant, type Tenant } from '../helpers/factories';

const ctx = useApi();
const send = (tenant: Tenant, body: unknown) => as(ctx.api, tenant.token).post('/api/v1/send').send(body as object);

async function rowsOf(tenant: Tenant) {
  return {
    sends: await db().send.count({ where: { accountId: tenant.account.id } }),
    messages: await db().message.count({ where: { accountId: tenant.account.id } }),
  };
}

const recipients = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);

describe('POST /api/v1/send: acceptance', () => {
  it('answers 202 with the send id, one queued message per recipient and an empty skipped list', async () => {
    const tenant = await makeTenant();
    const res = await send(tenant, { to: ['A@Example.org', 'Bob <b@example.org>'], subject: 'Hi', text: 'Hello' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      ok: true,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'queued',
      messages: [
        { id: expect.any(String), to: 'a@example.org', status: 'queued' },
        { id: expect.any(String), to: 'b@example.org', status: 'queued' },
      ],
      skipped: [],
    });
    const rows = await db().message.findMany({ where: { sendId: res.body.id } });
    expect(rows.map((r) => r.to).sort()).toEqual(['a@example.org', 'b@example.org']);
    expect(rows.every((r) => r.kind === 'transactional' && r.enqueuedAt)).toBe(true);
  });

  it('queues a lone copy as its delivery job, and several as one dispatch job that a worker fans out, send_at kept', async () => {
    const tenant = await makeTenant();
    const one = await send(tenant, { to: 'solo@example.org', subject: 'Hi', text: 'Hello' });
    const soloId = one.body.messages[0].id as string;
    // the answer does not wait for Redis (DeliveryQueue.addInBackground): the job is there a moment later
    expect((await waitFor(() => queue(QUEUE.delivery).getJob(jobId.delivery(soloId)), { what: 'the job' })).data).toEqual({ messageId: soloId });

    const sendAt = new Date(Date.now() + 3_600_000);
    const many = await send(tenant, { to: ['m1@example.org', 'm2@example.org', 'm3@example.org'], subject: 'Hi', text: 'Hello', send_at: sendAt.toISOString() });
    const ids = (many.body.messages as { id: string }[]).map((m) => m.id);
    const fan = await waitFor(() => queue(QUEUE.delivery).getJob(jobId.dispatch(ids[0]!)), { what: 'the dispatch job' });
    expect(fan?.name).toBe(DISPATCH);
    expect(fan?.data).toEqual({ messages: ids.map((id) => ({ id, notBefore: sendAt.getTime() })) });
    expect(await Promise.all(ids.map((id) => queue(QUEUE.delivery).getJob(jobId.delivery(id))))).toEqual(ids.map(() => undefined));

    expect(await deliveryProcessor(createDelivery(db(), deliveryRegistrations()))(fan!)).toBe('dispatched');
    for (const id of ids) {
      const job = await queue(QUEUE.delivery).getJob(jobId.delivery(id));
      expect(job?.data).toEqual({ messageId: id });
      expect(job!.opts.delay).toBeGreaterThan(3_500_000);
      expect(await job!.getState()).toBe('delayed');
    }
  });

  it('counts a recipient listed twice once', async () => {
    const tenant = await makeTenant();
    const res = await send(tenant, { to: ['x@example.org', 'X@example.org', 'Name <x@example.org>'], subject: 'Hi', text: 'Hello' });
    expect(res.status).toBe(202);
    expect(res.body.messages).toHaveLength(1);
  });

  it('accepts a single address as a string', async () => {
    const tenant = await makeTenant();
    const res = await send(tenant, { to: 'one@example.org', subject: 'Hi', html: '<p>Hello</p>' });
    expect(res.status).toBe(202);
    expect(res.body.messages).toEqual([{ id: expect.any(String), to: 'one@example.org', status: 'queued' }]);
  });

  it('accepts 50 recipients and refuses 51 with 400, creating nothing', async () => {
    const tenant = await makeTenant();
    expect((await send(tenant, { to: recipients(50), subject: 'Hi', text: 'x' })).status).toBe(202);
    const res = await send(tenant, { to: recipients(51), subject: 'Hi', text: 'x' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/^to: at most 50/) });
    expect(await rowsOf(tenant)).toEqual({ sends: 1, messages: 50 });
  });

  it('accepts a subject of 300 characters and refuses 301 naming the field', async () => {
    const tenant = await makeTenant();
    expect((await send(tenant, { to: 'a@example.org', subject: 's'.repeat(300), text: 'x' })).status).toBe(202);
    const res = await send(tenant, { to: 'a@example.org', subject: 's'.repeat(301), text: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^subject/);
  });

  it.each([
    ['a missing subject', { to: 'a@example.org', text: 'x' }, /^subject/],
    ['neither text nor html', { to: 'a@example.org', subject: 'Hi' }, /text or html/],
    ['an invalid address', { to: ['a@example.org', 'not-an-address'], subject: 'Hi', text: 'x' }, /^to/],
    ['a missing to', { subject: 'Hi', text: 'x' }, /^to/],
    ['a subject that is not a string', { to: 'a@example.org', subject: 5, text: 'x' }, /^subject/],
    ['an unknown field', { to: 'a@example.org', subject: 'Hi', text: 'x', cc: 'b@example.org' }, /^cc/],
    ['a header that is not X-', { to: 'a@example.org', subject: 'Hi', text: 'x', headers: { Bcc: 'b@example.org' } }, /^headers/],
    ['a header value with a line break', { to: 'a@example.org', subject: 'Hi', text: 'x', headers: { 'X-A': 'a\r\nBcc: b@example.org' } }, /^headers/],
    ['attachment content that is not base64', { to: 'a@example.org', subject: 'Hi', text: 'x', attachments: [{ filename: 'a.txt', content: 'not base64!' }] }, /^attachments\[0\]\.content/],
    ['send_at more than 30 days ahead', { to: 'a@example.org', subject: 'Hi', text: 'x', send_at: new Date(Date.now() + 31 * 86_400_000).toISOString() }, /^send_at/],
    ['send_at that is not a time', { to: 'a@example.org', subject: 'Hi', text: 'x', send_at: 'tomorrow' }, /^send_at/],
    ['a body that is not an object', ['a@example.org'], /object/],
  ])('answers 400 for %s, creating nothing', async (_what, body, error) => {
    const tenant = await makeTenant();
    const res = await send(tenant, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(error) });
    expect(await rowsOf(tenant)).toEqual({ sends: 0, messages: 0 });
  });

  it('answers 400 for malformed JSON', async () => {
    const tenant = await makeTenant();
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').send('{"to":');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.any(String) });
  });

  it('answers 422 when to is empty', async () => {
    const tenant = await makeTenant();
    for (const to of [[], '']) {
      const res = await send(tenant, { to, subject: 'Hi', text: 'x' });
      expect(res.status).toBe(422);
      expect(res.body.error).toMatch(/nobody to write to/);
    }
  });

  it('answers 403 for a from address other than the key mailbox, and accepts another display name', async () => {
    const tenant = await makeTenant();
    const foreign = await send(tenant, { to: 'a@example.org', from: 'someone@else.example', subject: 'Hi', text: 'x' });
    expect(foreign.status).toBe(403);
    // the API names its field; the reason is the From rule's (domains/sending.ts), as SMTP's 550 5.7.1 gives it
    expect(foreign.body.error).toBe(`from: this key sends only from ${tenant.mailbox.address}`);
    expect(await rowsOf(tenant)).toEqual({ sends: 0, messages: 0 });
    const own = await send(tenant, { to: 'a@example.org', from: `Support Team <${tenant.mailbox.address.toUpperCase()}>`, subject: 'Hi', text: 'x' });
    expect(own.status).toBe(202);
    expect((await db().send.findUniqueOrThrow({ where: { id: own.body.id } })).fromName).toBe('Support Team');
  });

  it('accepts a body of exactly 1 MB and answers 413 one byte over', async () => {
    const tenant = await makeTenant();
    const bodyOf = (bytes: number) => {
      const empty = JSON.stringify({ to: 'a@example.org', subject: 'Hi', text: '' });
      return empty.replace('"text":""', `"text":"${'x'.repeat(bytes - empty.length)}"`);
    };
    const post = (raw: string) => as(ctx.api, tenant.token).post('/api/v1/send').set('Content-Type', 'application/json').send(raw);
    expect(Buffer.byteLength(bodyOf(1_048_576))).toBe(1_048_576);
    expect((await post(bodyOf(1_048_576))).status).toBe(202);
    const over = await post(bodyOf(1_048_577));
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ ok: false, error: expect.stringMatching(/1 MB/) });
    expect(await rowsOf(tenant)).toEqual({ sends: 1, messages: 1 });
  });

  it('counts the email (text + html + decoded attachments) against 1 MB, not only the request body', () => {
    // the JSON parser already refuses bodies over 1 MB; the email itself is checked too, in case the two ever differ
    const half = 'x'.repeat(512 * 1024);
    const body = (extra: number) => ({ to: 'a@example.org', subject: 'Hi', text: half, html: half + 'y'.repeat(extra) });
    expect(() => parseSendRequest(body(0), 'me@example.com')).not.toThrow();
    expect(() => parseSendRequest(body(1), 'me@example.com')).toThrow(PayloadTooLarge);
    const attachment = { filename: 'a.bin', content: Buffer.alloc(1024 * 1024 - 1).toString('base64') };
    expect(() => parseSendRequest({ to: 'a@example.org', subject: 'Hi', text: 'ab', attachments: [attachment] }, 'me@example.com')).toThrow(PayloadTooLarge);
  });
});

describe('GET /api/v1/send/:id', () => {
  it('answers the same shape with current statuses', async () => {
    const tenant = await makeTenant();
    const posted = await send(tenant, { to: ['a@example.org', 'b@example.org'], subject: 'Hi', text: 'x' });
    await db().message.update({ where: { id: posted.body.messages[0].id }, data: { status: 'sent' } });
    const res = await as(ctx.api, tenant.token).get(`/api/v1/send/${posted.body.id}`);
    expect(res.status).toBe(200);
    // each message with the Message-ID it goes out with, and the send with its send_at
    const messageId = (m: { id: string }) => ({ ...m, message_id: `<${m.id}@example.com>` });
    expect(res.body).toEqual({
      ...posted.body,
      status: 'sending',
      send_at: null,
      messages: expect.arrayContaining([{ ...messageId(posted.body.messages[0]), status: 'sent' }, messageId(posted.body.messages[1])]),
    });
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('answers 404 to another account, and for an unknown or malformed id', async () => {
    const tenant = await makeTenant();
    const stranger = await makeTenant();
    const posted = await send(tenant, { to: 'a@example.org', subject: 'Hi', text: 'x' });
    expect((await as(ctx.api, stranger.token).get(`/api/v1/send/${posted.body.id}`)).status).toBe(404);
    expect((await as(ctx.api, tenant.token).get('/api/v1/send/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const malformed = await as(ctx.api, tenant.token).get('/api/v1/send/nope');
    expect(malformed.status).toBe(404);
    expect(malformed.body.ok).toBe(false);
  });
});
