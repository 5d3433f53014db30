import { db } from '../../apps/core/src/db';
import { batchRowsOnTheWire } from '../../apps/core/src/delivery/delivery';
import { deliverBatch } from '../../apps/core/src/delivery/dispatch';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { deliveryProcessor } from '../../apps/worker/src/processors/delivery';
import { makeTenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { writtenCopies } from './helpers';

// no worker: the test runs the batch itself and looks at the jobs it leaves
const ctx = useDelivery();
const sink = useMail({ delivery: ctx });
beforeEach(() => {
  sink.rule = undefined;
});

const deliveryJob = (id: string) => queue(QUEUE.delivery).getJob(jobId.delivery(id));
const row = (id: string) => db().message.findUniqueOrThrow({ where: { id } });

describe('dispatch jobs: a batch of accepted copies delivered in one job', () => {
  it('sends every row it can claim at once, and gives each other row its own delivery job', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const ids = await writtenCopies(tenant, ['ok1@example.org', 'ok2@example.org', 'busy@example.org', 'gone@example.org', 'later@example.org', 'soft@example.org', 'hard@example.org']);
    const id = (to: string) => ids.get(to)!;
    sink.rule = (stage, address) =>
      stage === 'rcpt' && address === 'soft@example.org' ? { code: 451, message: 'try later' } : stage === 'rcpt' && address === 'hard@example.org' ? { code: 550, message: 'no such user' } : undefined;
    // after acceptance: one address complained, one row is held by another worker
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@example.org', reason: 'complained' } });
    await db().message.update({ where: { id: id('busy@example.org') }, data: { status: 'sending', lockedUntil: new Date(Date.now() + 60_000) } });
    const later = new Date(Date.now() + 3_600_000);

    const result = await deliverBatch(
      ctx.delivery,
      [...ids].map(([to, messageId]) => ({ id: messageId, notBefore: to === 'later@example.org' ? later : null })),
    );

    expect(result).toEqual({ sent: 2, handedOn: 4 });
    for (const to of ['ok1@example.org', 'ok2@example.org']) {
      expect(sink.to(to)).toHaveLength(1);
      expect(sink.to(to)[0]!.parsed.messageId).toBe((await row(id(to))).messageIdHeader);
      expect(await row(id(to))).toMatchObject({ status: 'sent', attempts: 1, lockedUntil: null });
      expect(await deliveryJob(id(to))).toBeUndefined();
    }
    expect(await row(id('hard@example.org'))).toMatchObject({ status: 'bounced' });
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'hard@example.org' } })).toMatchObject({ reason: 'bounced' });
    expect(await deliveryJob(id('hard@example.org'))).toBeUndefined();

    // a temporary failure: deferred, its own job after the first retry's wait, with every attempt still ahead
    expect(await row(id('soft@example.org'))).toMatchObject({ status: 'deferred', lastError: expect.stringMatching(/try later/) });
    const soft = await deliveryJob(id('soft@example.org'));
    expect(await soft!.getState()).toBe('delayed');
    expect(soft!.opts.delay).toBeGreaterThan(8_000);
    expect(soft!.attemptsMade).toBe(0);
    // not due yet: delayed to send_at, untouched
    const delayed = await deliveryJob(id('later@example.org'));
    expect(delayed!.opts.delay).toBeGreaterThan(3_500_000);
    expect(await row(id('later@example.org'))).toMatchObject({ status: 'queued', attempts: 0 });
    // left to the full claim of their own jobs: it cancels the suppressed one and waits out the other worker's lease
    for (const to of ['gone@example.org', 'busy@example.org']) expect(await (await deliveryJob(id(to)))!.getState()).toBe('waiting');
    expect(await deliveryProcessor(ctx.delivery)((await deliveryJob(id('gone@example.org')))!)).toBe('cancelled');
    expect(sink.to('gone@example.org')).toHaveLength(0);
    expect(sink.to('busy@example.org')).toHaveLength(0);
  });

  it("claims the rows of a worker's concurrent dispatch jobs in one statement", async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const ids = [...(await writtenCopies(tenant, ['job1a@example.org', 'job1b@example.org', 'job2a@example.org', 'job2b@example.org'])).values()];
    const before = ctx.delivery.claims.stats.claims;
    const jobs = [ids.slice(0, 2), ids.slice(2)].map((rows) => deliverBatch(ctx.delivery, rows.map((id) => ({ id, notBefore: null }))));
    expect(await Promise.all(jobs)).toEqual([{ sent: 2, handedOn: 0 }, { sent: 2, handedOn: 0 }]);
    expect(ctx.delivery.claims.stats.claims - before).toBe(1);
    for (const id of ids) expect(await row(id)).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it('sends once when the same batch runs again (a retried or stalled dispatch job)', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const ids = [...(await writtenCopies(tenant, ['again1@example.org', 'again2@example.org'])).values()];
    const batch = ids.map((id) => ({ id, notBefore: null }));
    expect(await deliverBatch(ctx.delivery, batch)).toEqual({ sent: 2, handedOn: 0 });
    expect(await deliverBatch(ctx.delivery, batch)).toEqual({ sent: 0, handedOn: 2 });
    for (const id of ids) expect(await deliveryProcessor(ctx.delivery)((await deliveryJob(id))!)).toBe('finished');
    expect(sink.to('again1@example.org')).toHaveLength(1);
    expect(sink.to('again2@example.org')).toHaveLength(1);
  });

  it('has at most batchRowsOnTheWire() rows claimed and on the wire at once, however many rows the batch holds', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const bound = batchRowsOnTheWire();
    const to = Array.from({ length: bound + 20 }, (_, i) => `many${i}@example.org`);
    const ids: string[] = [];
    for (let i = 0; i < to.length; i += 50) ids.push(...(await writtenCopies(tenant, to.slice(i, i + 50))).values());
    sink.dataDelayMs = 10;
    let most = 0;
    let done = false;
    const watching = (async () => {
      while (!done) {
        // claimed and not yet at the sink; read in this order, so the figure can only err low
        const claimed = await db().message.count({ where: { id: { in: ids }, attempts: { gt: 0 } } });
        const received = sink.messages.filter((m) => m.envelope.to[0]!.startsWith('many')).length;
        most = Math.max(most, claimed - received);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      expect(await deliverBatch(ctx.delivery, ids.map((id) => ({ id, notBefore: null })))).toEqual({ sent: ids.length, handedOn: 0 });
    } finally {
      done = true;
      sink.dataDelayMs = 0;
      await watching;
    }
    expect(most).toBeGreaterThan(bound / 2);
    expect(most).toBeLessThanOrEqual(bound);
  });
});
