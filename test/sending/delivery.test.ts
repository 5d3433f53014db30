import { Job } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createDelivery, deliverMessage } from '../../apps/core/src/delivery/deliver';
import type { PreSendGuards } from '../../apps/core/src/delivery/guards';
import { storeMessages } from '../../apps/core/src/delivery/outbox';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { deliveryProcessor } from '../../apps/worker/src/processors/delivery';
import { makeTenant } from '../helpers/factories';
import { useDelivery, useMail, withGuards } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { insertMessage, queueEmail, waitForStatus } from './helpers';

const ctx = useDelivery();
const sink = useMail({ queues: ['delivery'], delivery: ctx });
beforeEach(() => {
  sink.rule = undefined;
});

describe('delivery worker', () => {
  it('delivers a stored and queued message once over SMTP, with its own Message-ID and only its recipient', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const id = await queueEmail(tenant, { to: 'once@example.org', html: '<p>Hi <b>there</b></p>', text: null });
    const row = await waitForStatus(id, ['sent']);
    const [mail] = sink.to('once@example.org');
    expect(sink.to('once@example.org')).toHaveLength(1);
    expect(mail!.envelope).toEqual({ from: tenant.mailbox.address, to: ['once@example.org'] });
    expect(mail!.parsed.messageId).toBe(row.messageIdHeader);
    expect(mail!.parsed.to).toMatchObject({ value: [{ address: 'once@example.org' }] });
    expect(mail!.parsed.from?.value[0]).toMatchObject({ address: tenant.mailbox.address, name: 'Sender' });
    expect(mail!.parsed.date).toBeInstanceOf(Date);
    expect(mail!.parsed.text).toContain('Hi there');
    expect(row).toMatchObject({ attempts: 1, lockedUntil: null, smtpResponse: expect.stringMatching(/^250/) });
    expect(row.sentAt).toBeInstanceOf(Date);
  });

  it('sends once when the same job runs again after delivery, or twice at the same moment', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const id = await queueEmail(tenant, { to: 'twice@example.org' });
    await waitForStatus(id, ['sent']);
    const job = await Job.fromId(queue(QUEUE.delivery), jobId.delivery(id));
    expect(await deliveryProcessor(ctx.delivery)(job!)).toBe('finished');

    const row = await insertMessage(tenant, 'race@example.org');
    const outcomes = await Promise.all([1, 2, 3].map(() => deliverMessage(ctx.delivery, row.id, { lastAttempt: false })));
    // one sends; each other finds the row held (busy) or, when the winner's SMTP and mark were quicker than its own
    // look at the row under load, already sent (finished): either way it sends nothing
    const kinds = outcomes.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'sent')).toHaveLength(1);
    expect(kinds.filter((k) => k !== 'sent').every((k) => k === 'busy' || k === 'finished')).toBe(true);
    for (const outcome of outcomes) if (outcome.kind === 'finished') expect(outcome.status).toBe('sent');
    await waitFor(() => sink.to('race@example.org').length === 1);
    expect(sink.to('twice@example.org')).toHaveLength(1);
    expect(sink.to('race@example.org')).toHaveLength(1);
  });

  it("waits for another worker's lease to end instead of sending alongside it", async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const { id } = await insertMessage(tenant, 'leased@example.org');
    const leaseEnd = new Date(Date.now() + 1500);
    await db().message.update({ where: { id }, data: { status: 'sending', lockedUntil: leaseEnd } });
    await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: id }, { ...JOB_OPTIONS.delivery, jobId: jobId.delivery(id) });
    const job = await Job.fromId(queue(QUEUE.delivery), jobId.delivery(id));
    await waitFor(async () => (await job!.getState()) === 'delayed');
    expect(sink.to('leased@example.org')).toHaveLength(0);
    const row = await waitForStatus(id, ['sent']);
    expect(row.sentAt!.getTime()).toBeGreaterThanOrEqual(leaseEnd.getTime());
    expect(sink.to('leased@example.org')).toHaveLength(1);
  });

  it('defers on a 4xx answer and delivers on a later attempt', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    let refusals = 0;
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'later@example.org' && refusals++ < 2 ? { code: 451, message: 'try again later' } : undefined);
    const { id } = await insertMessage(tenant, 'later@example.org');
    // the real attempts with a short backoff, so the test does not wait out the production schedule
    await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: id }, { ...JOB_OPTIONS.delivery, jobId: jobId.delivery(id), backoff: { type: 'fixed', delay: 50 } });
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id } })).status === 'deferred');
    const row = await waitForStatus(id, ['sent']);
    expect(row.attempts).toBe(3);
    expect(sink.to('later@example.org')).toHaveLength(1);
  });

  it('marks the message failed after the last attempt when the answer stays 4xx', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'never@example.org' ? { code: 452, message: 'mailbox full' } : undefined);
    const { id } = await insertMessage(tenant, 'never@example.org');
    await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: id }, { ...JOB_OPTIONS.delivery, attempts: 3, jobId: jobId.delivery(id), backoff: { type: 'fixed', delay: 50 } });
    const row = await waitForStatus(id, ['failed']);
    expect(row.attempts).toBe(3);
    expect(row.smtpResponse).toMatch(/^452/);
    expect(await db().suppression.count({ where: { accountId: tenant.account.id } })).toBe(0);
  });

  it('treats a refused connection as temporary: the row is deferred and the job retries', async () => {
    const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:1' });
    const id = await queueEmail(tenant, { to: 'offline@example.org' });
    const row = await waitForStatus(id, ['deferred']);
    expect(row.lastError).toMatch(/ECONNREFUSED|connect/i);
    const job = await Job.fromId(queue(QUEUE.delivery), jobId.delivery(id));
    expect(await job!.getState()).toBe('delayed');
    await job!.remove();
  });

  it('bounces at once on a 5xx recipient refusal, records the answer and suppresses the address', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'gone@example.org' ? { code: 550, message: 'no such user' } : undefined);
    const id = await queueEmail(tenant, { to: 'gone@example.org' });
    const row = await waitForStatus(id, ['bounced']);
    expect(row).toMatchObject({ attempts: 1, smtpResponse: expect.stringMatching(/^550.*no such user/) });
    const suppression = await db().suppression.findUniqueOrThrow({ where: { accountId_email: { accountId: tenant.account.id, email: 'gone@example.org' } } });
    expect(suppression.reason).toBe('bounced');
    const job = await Job.fromId(queue(QUEUE.delivery), jobId.delivery(id));
    await waitFor(async () => (await job!.getState()) === 'completed');
  });

  it('fails at once on a 5xx answer to the message data; spam is not about the address, so nothing is suppressed', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) =>
      stage === 'data' && address === 'spamtrap@example.org'
        ? { code: 554, message: 'rejected as spam' }
        : stage === 'data' && address === 'gone@example.org'
          ? { code: 550, message: '5.1.1 user unknown' }
          : undefined;
    const id = await queueEmail(tenant, { to: 'spamtrap@example.org' });
    const row = await waitForStatus(id, ['failed']);
    expect(row).toMatchObject({ attempts: 1, smtpResponse: expect.stringMatching(/^554/), bounce: expect.objectContaining({ reason: 'spamdetected', class: 'not_address', dead: false }) });
    expect(await db().suppression.findUnique({ where: { accountId_email: { accountId: tenant.account.id, email: 'spamtrap@example.org' } } })).toBeNull();
    // a dead address refused at the data stage is still dead
    const gone = await waitForStatus(await queueEmail(tenant, { to: 'gone@example.org' }), ['bounced']);
    expect(gone.bounce).toMatchObject({ reason: 'userunknown', dead: true });
    const suppression = await db().suppression.findUniqueOrThrow({ where: { accountId_email: { accountId: tenant.account.id, email: 'gone@example.org' } } });
    expect(suppression).toMatchObject({ reason: 'bounced', bounceReason: 'userunknown', detail: expect.stringMatching(/^550/) });
  });

  it('cancels without sending when a pre-send guard refuses', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    // a guard table of this test's own, passed to this delivery only: nothing stays installed for later tests
    const guards: PreSendGuards = { sequence: async (_tx, message) => (message.to === 'replied@example.org' ? 'the prospect replied' : null) };
    const [row] = await db().$transaction((tx) =>
      storeMessages(tx, [{ accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'sequence', to: 'replied@example.org', subject: 'Hi', text: 'x' }]),
    );
    expect(await deliverMessage(createDelivery(db(), withGuards(guards)), row!.id!, { lastAttempt: false })).toEqual({ kind: 'cancelled', reason: 'the prospect replied' });
    expect((await db().message.findUniqueOrThrow({ where: { id: row!.id! } })).lastError).toBe('the prospect replied');
    expect(sink.to('replied@example.org')).toHaveLength(0);
  });

  it.each(['transactional', 'confirmation'] as const)(
    'cancels a queued %s email whose address was suppressed after it was queued',
    async (kind) => {
      const tenant = await makeTenant({ smtp: sink.url });
      const to = `late-bounce-${kind}@example.org`;
      // the bounce of another email lands while this one waits in the queue (accept-time filtering is long past)
      await db().suppression.create({ data: { accountId: tenant.account.id, email: to, reason: 'bounced' } });
      const id = await queueEmail(tenant, { kind, to });
      const row = await waitForStatus(id, ['cancelled']);
      expect(row.lastError).toBe('the address is suppressed (bounced)');
      expect(sink.to(to)).toHaveLength(0);
    },
  );

  it('rebuilds the pooled transport when the mailbox changes', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    await waitForStatus(await queueEmail(tenant, { to: 'first@example.org' }), ['sent']);
    const other = await new SmtpSink().start();
    try {
      await db().mailbox.update({ where: { id: tenant.mailbox.id }, data: { smtpPort: other.portNumber } });
      await waitForStatus(await queueEmail(tenant, { to: 'second@example.org' }), ['sent']);
      expect(other.to('second@example.org')).toHaveLength(1);
      expect(sink.to('second@example.org')).toHaveLength(0);
    } finally {
      ctx.delivery.close();
      await other.stop();
    }
  });

  it('keeps threading headers of sequence emails', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    // no prospect behind this row, so the production guard would cancel it: a guard table that lets it go, for this call
    const [row] = await db().$transaction((tx) =>
      storeMessages(tx, [
        { accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'sequence', to: 'thread@example.org', subject: 'Re', text: 'x', inReplyTo: '<first@example.com>', references: '<first@example.com>' },
      ]),
    );
    const letThrough = createDelivery(db(), withGuards({ sequence: async () => null }));
    try {
      expect(await deliverMessage(letThrough, row!.id!, { lastAttempt: false })).toMatchObject({ kind: 'sent' });
    } finally {
      letThrough.close();
    }
    const [mail] = sink.to('thread@example.org');
    expect(mail!.parsed.inReplyTo).toBe('<first@example.com>');
    expect(mail!.parsed.references).toBe('<first@example.com>');
  });
});
