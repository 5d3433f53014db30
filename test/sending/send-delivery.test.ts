import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { deliverMessage } from '../../apps/core/src/delivery/deliver';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { as, useApi } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { waitForStatus } from './helpers';

const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ queues: ['delivery'], concurrency: 10, delivery: worker });
beforeEach(() => {
  sink.rule = undefined;
});

const send = (tenant: Tenant, body: object) => as(ctx.api, tenant.token).post('/api/v1/send').send(body);

describe('POST /api/v1/send on the wire', () => {
  it('delivers one copy with the mailbox as sender, its own Message-ID and Date', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const res = await send(tenant, { to: 'Reader <one@example.org>', from: `Shop <${tenant.mailbox.address}>`, subject: 'Your receipt', text: 'Thanks!' });
    expect(res.status).toBe(202);
    const row = await waitForStatus(res.body.messages[0].id, ['sent']);
    const [mail] = sink.to('one@example.org');
    expect(sink.to('one@example.org')).toHaveLength(1);
    expect(mail!.envelope).toEqual({ from: tenant.mailbox.address, to: ['one@example.org'] });
    expect(mail!.parsed.from?.value).toEqual([{ name: 'Shop', address: tenant.mailbox.address }]);
    expect(mail!.parsed.subject).toBe('Your receipt');
    expect(mail!.parsed.text?.trim()).toBe('Thanks!');
    expect(mail!.parsed.messageId).toBe(row.messageIdHeader);
    expect(row.messageIdHeader).toMatch(new RegExp(`@${tenant.mailbox.address.split('@')[1]}>$`));
    expect(Math.abs(mail!.parsed.date!.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('delivers 50 recipients as 50 separate messages, each with only its own address in To', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const to = Array.from({ length: 50 }, (_, i) => `fifty${i}@example.org`);
    const res = await send(tenant, { to, subject: 'News', text: 'x' });
    expect(res.status).toBe(202);
    await waitFor(() => to.every((a) => sink.to(a).length === 1), { timeout: 20_000, what: '50 copies' });
    const copies = to.map((a) => sink.to(a)[0]!);
    for (const [i, copy] of copies.entries()) {
      expect(copy.envelope.to).toEqual([to[i]]);
      expect(copy.parsed.to).toMatchObject({ value: [{ address: to[i] }] });
      expect(copy.parsed.cc).toBeUndefined();
      expect(copy.parsed.bcc).toBeUndefined();
    }
    expect(new Set(copies.map((c) => c.parsed.messageId)).size).toBe(50);
  });

  it('adds a text part made from the html when only html is given', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const html = '<h1>Welcome</h1><p>Read the <a href="https://example.org/guide">guide</a> &amp; enjoy.</p>';
    await send(tenant, { to: 'html@example.org', subject: 'Hi', html });
    await waitFor(() => sink.to('html@example.org').length === 1);
    const [mail] = sink.to('html@example.org');
    expect(mail!.parsed.html).toContain('<h1>Welcome</h1>');
    expect(mail!.parsed.text).toContain('Welcome');
    expect(mail!.parsed.text).toContain('guide (https://example.org/guide) & enjoy.');
    expect(mail!.parsed.text).not.toContain('<');
  });

  it('delivers attachments intact, with reply_to and custom X- headers', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const binary = crypto.randomBytes(200_000);
    const res = await send(tenant, {
      to: 'files@example.org',
      subject: 'Invoice',
      text: 'Attached',
      reply_to: 'Billing <billing@example.com>',
      headers: { 'X-Order-Id': '42', 'X-Campaign': 'autumn' },
      attachments: [
        { filename: 'invoice.pdf', content: binary.toString('base64'), content_type: 'application/pdf' },
        { filename: 'notes.txt', content: Buffer.from('plain notes').toString('base64') },
      ],
    });
    expect(res.status).toBe(202);
    await waitFor(() => sink.to('files@example.org').length === 1);
    const { parsed } = sink.to('files@example.org')[0]!;
    expect(parsed.attachments).toHaveLength(2);
    const [pdf, notes] = parsed.attachments;
    expect(pdf).toMatchObject({ filename: 'invoice.pdf', contentType: 'application/pdf' });
    expect(crypto.createHash('sha256').update(pdf!.content).digest('hex')).toBe(crypto.createHash('sha256').update(binary).digest('hex'));
    expect(notes!.filename).toBe('notes.txt');
    expect(notes!.content.toString()).toBe('plain notes');
    expect(parsed.replyTo?.value).toEqual([{ name: 'Billing', address: 'billing@example.com' }]);
    expect(parsed.headers.get('x-order-id')).toBe('42');
    expect(parsed.headers.get('x-campaign')).toBe('autumn');
  });

  it('does not deliver before send_at, and delivers after it', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const sendAt = new Date(Date.now() + 2500);
    const res = await send(tenant, { to: 'later@example.org', subject: 'Scheduled', text: 'x', send_at: sendAt.toISOString() });
    expect(res.status).toBe(202);
    const id = res.body.messages[0].id as string;
    const row = await db().message.findUniqueOrThrow({ where: { id } });
    expect(row.notBefore?.toISOString()).toBe(sendAt.toISOString());
    const job = await waitFor(() => queue(QUEUE.delivery).getJob(jobId.delivery(id)), { what: 'the delayed job' });
    expect(await job.getState()).toBe('delayed');
    // a job that runs early (say, queued again without its delay) still waits for send_at
    expect(await deliverMessage(worker.delivery, id, { lastAttempt: false })).toEqual({ kind: 'early', until: sendAt });
    expect(sink.to('later@example.org')).toHaveLength(0);
    await waitFor(() => sink.to('later@example.org').length === 1, { timeout: 15_000 });
    const sent = await waitForStatus(id, ['sent']);
    expect(sent.sentAt!.getTime()).toBeGreaterThanOrEqual(sendAt.getTime());
  });

  it('answers 200 with final statuses when Prefer: wait=N is sent and delivery finishes in time', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const res = await send(tenant, { to: ['w1@example.org', 'w2@example.org'], subject: 'Now', text: 'x' }).set('Prefer', 'wait=10');
    expect(res.status).toBe(200);
    expect(res.headers['preference-applied']).toBe('wait=10');
    expect(res.body).toEqual({
      ok: true,
      id: expect.any(String),
      status: 'sent',
      messages: [
        { id: expect.any(String), to: 'w1@example.org', status: 'sent' },
        { id: expect.any(String), to: 'w2@example.org', status: 'sent' },
      ],
      skipped: [],
    });
    expect(sink.to('w1@example.org')).toHaveLength(1);
  });

  it('wakes 20 waiting requests when their copies are delivered, reading the statuses a few times, not every 100 ms', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.dataDelayMs = 1_500;
    const before = ctx.api.state.sending.finished.stats.reads;
    const started = Date.now();
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => send(tenant, { to: `waiter${i}@example.org`, subject: 'Now', text: 'x' }).set('Prefer', 'wait=15')));
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(answers.every((r) => r.body.status === 'sent')).toBe(true);
      // each waiter: one read at the start, one per wake-up or 2-second fallback; polling every 100 ms would be 15+ each
      const reads = ctx.api.state.sending.finished.stats.reads - before;
      const seconds = (Date.now() - started) / 1000;
      expect(reads).toBeLessThanOrEqual(20 * (3 + Math.ceil(seconds / 2)));
      expect(reads).toBeLessThan(20 * Math.floor(seconds * 10));
    } finally {
      sink.dataDelayMs = 0;
    }
  });

  it('answers 202 after waiting N seconds when a copy is still unfinished', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'slow@example.org' ? { code: 451, message: 'greylisted' } : undefined);
    const started = Date.now();
    const res = await send(tenant, { to: 'slow@example.org', subject: 'Now', text: 'x' }).set('Prefer', 'wait=1');
    expect(res.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(res.body.status).toBe('queued');
    await queue(QUEUE.delivery).remove(jobId.delivery(res.body.messages[0].id));
  });

  it('reports a 5xx refusal as bounced, suppresses the address and skips it next time', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'nobody@example.org' ? { code: 550, message: 'user unknown' } : undefined);
    const res = await send(tenant, { to: ['nobody@example.org', 'fine@example.org'], subject: 'Hi', text: 'x' }).set('Prefer', 'wait=10');
    expect(res.status).toBe(200);
    expect(res.body.messages).toEqual([
      { id: expect.any(String), to: 'nobody@example.org', status: 'bounced' },
      { id: expect.any(String), to: 'fine@example.org', status: 'sent' },
    ]);
    const view = await as(ctx.api, tenant.token).get(`/api/v1/send/${res.body.id}`);
    expect(view.body.messages).toEqual(
      expect.arrayContaining([
        { ...res.body.messages[0], message_id: expect.stringMatching(/^<.+@.+>$/), bounce: { reason: 'userunknown', class: 'dead', status: null, smtp_code: '550', diagnostic: expect.stringMatching(/^550 user unknown/), dead: true } },
        { ...res.body.messages[1], message_id: expect.stringMatching(/^<.+@.+>$/) },
      ]),
    );
    const row = await db().message.findUniqueOrThrow({ where: { id: res.body.messages[0].id } });
    expect(row.smtpResponse).toMatch(/^550 user unknown/);
    const suppression = await db().suppression.findUniqueOrThrow({ where: { accountId_email: { accountId: tenant.account.id, email: 'nobody@example.org' } } });
    expect(suppression).toMatchObject({ reason: 'bounced', bounceReason: 'userunknown' });
    const next = await send(tenant, { to: ['nobody@example.org', 'fine@example.org'], subject: 'Again', text: 'x' });
    expect(next.body.skipped).toEqual([{ to: 'nobody@example.org', reason: 'bounced' }]);
  });

  it('SMTP answers at delivery follow the bounce reasons: not about the address never suppresses, mailbox failures suppress on the third', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) =>
      stage === 'data' && address === 'spam@example.org'
        ? { code: 554, message: '5.7.1 Message rejected as spam by Content Filtering' }
        : stage === 'rcpt' && address === 'full@example.org'
          ? { code: 552, message: '5.2.2 Mailbox full' }
          : undefined;
    const blocked = await send(tenant, { to: 'spam@example.org', subject: 'Hi', text: 'x' }).set('Prefer', 'wait=10');
    expect(blocked.body.messages[0].status).toBe('failed');
    const view = await as(ctx.api, tenant.token).get(`/api/v1/send/${blocked.body.id}`);
    expect(view.body.messages[0].bounce).toMatchObject({ reason: 'spamdetected', class: 'not_address', status: '5.7.1', smtp_code: '554', dead: false });
    const again = await send(tenant, { to: 'spam@example.org', subject: 'Again', text: 'x' });
    expect(again.body.skipped).toEqual([]);
    for (const n of [1, 2, 3]) {
      const res = await send(tenant, { to: 'full@example.org', subject: `Full ${n}`, text: 'x' }).set('Prefer', 'wait=10');
      expect(res.body.messages[0].status).toBe('bounced');
      const suppressed = await db().suppression.findUnique({ where: { accountId_email: { accountId: tenant.account.id, email: 'full@example.org' } } });
      if (n < 3) expect(suppressed).toBeNull();
      else expect(suppressed).toMatchObject({ reason: 'bounced', bounceReason: 'mailboxfull' });
    }
    const after = await send(tenant, { to: ['full@example.org', 'ok@example.org'], subject: 'After', text: 'x' });
    expect(after.body.skipped).toEqual([{ to: 'full@example.org', reason: 'bounced' }]);
  });

  it('a bounce turns the address\'s subscriptions in the account to bounced and lowers the lists\' counts', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const client = as(ctx.api, tenant.token);
    expect((await client.post('/api/v1/subscribers').send({ list: list.key, email: 'gone-away@example.org' })).body.status).toBe('active');
    expect((await client.get('/api/v1/lists')).body.lists[0].subscribers).toBe(1);
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'gone-away@example.org' ? { code: 550, message: 'mailbox does not exist' } : undefined);
    const res = await send(tenant, { to: 'gone-away@example.org', subject: 'Hi', text: 'x' }).set('Prefer', 'wait=10');
    expect(res.body.messages[0].status).toBe('bounced');
    const subscriber = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: list.id, email: 'gone-away@example.org' } } });
    expect(subscriber.status).toBe('bounced');
    expect((await client.get('/api/v1/lists')).body.lists[0].subscribers).toBe(0);
    expect((await client.post('/api/v1/subscribers').send({ list: list.key, email: 'gone-away@example.org' })).body.status).toBe('suppressed');
  });

  it('replays the 200 answer of a Prefer: wait request', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const body = { to: 'waited@example.org', subject: 'Now', text: 'x' };
    const first = await send(tenant, body).set('Prefer', 'wait=10').set('Idempotency-Key', 'w');
    expect(first.status).toBe(200);
    const again = await send(tenant, body).set('Idempotency-Key', 'w');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(sink.to('waited@example.org')).toHaveLength(1);
  });
});
