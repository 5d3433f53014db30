import { changeBroadcast, createBroadcast } from '../../apps/core/src/broadcasts/service';
import { db } from '../../apps/core/src/db';
import { enqueueDelivery, storeMessages } from '../../apps/core/src/delivery/outbox';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { addActive, broadcastTenant } from '../broadcasts/support';
import { makeTenant } from '../helpers/factories';
import { runTs } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

describe('the worker process', () => {
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await new SmtpSink().start();
  });
  afterAll(() => sink.stop());

  it('on SIGTERM finishes the delivery in flight, then exits 0', async () => {
    sink.dataDelayMs = 1500;
    const tenant = await makeTenant({ smtp: sink.url });
    const [row] = await storeMessages(db(), [
      { accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'transactional', to: 'late@example.com', subject: 'In flight', text: 'body' },
    ]);
    // the worker process shares this file's database and Redis prefix through the environment
    const worker = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'info' });
    try {
      await enqueueDelivery(db(), [{ id: row!.id! }]);
      await waitFor(() => db().message.findUniqueOrThrow({ where: { id: row!.id! } }).then((m) => m.status === 'sending'), { timeout: 30_000, what: 'the delivery to start' });
      expect(sink.messages).toHaveLength(0);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    }
    expect(sink.to('late@example.com')).toHaveLength(1);
    const message = await db().message.findUniqueOrThrow({ where: { id: row!.id! } });
    expect(message.status).toBe('sent');
    expect(worker.stdout()).toContain('worker stopping');
  }, 60_000);

  it('on SIGTERM during a broadcast, hands the broadcast job back and exits 0; the next worker sends the rest, one copy each', async () => {
    sink.dataDelayMs = 0;
    // 5 copies a second: the broadcast of 40 takes about 8 s, long enough to stop the worker in the middle of it
    const t = await broadcastTenant(sink.url, { max_per_second: 5 });
    await addActive(t.listId, 40, 'stop', 'shutdown.example');
    const created = await createBroadcast(db(), { list: t.list.key, subject: 'Hi {{name}}', text: 'Number {{fields.n}}' });
    await changeBroadcast(db(), created.id, { status: 'sending' });
    const copies = () => sink.messages.filter((m) => m.envelope.to[0]!.endsWith('@shutdown.example')).map((m) => m.envelope.to[0]!);

    const first = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'info' });
    try {
      await waitFor(() => copies().length >= 5, { timeout: 30_000, what: 'the first copies' });
      first.child.kill('SIGTERM');
      // before: the broadcast job waited for its last copy, which the worker's stopped delivery jobs never sent
      await waitFor(() => first.child.exitCode !== null || first.child.signalCode !== null, { timeout: 20_000, what: 'the stopped worker to exit' });
      expect(first.child.exitCode).toBe(0);
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
    expect(copies().length).toBeLessThan(40);
    expect((await db().broadcast.findUniqueOrThrow({ where: { id: created.id } })).status).toBe('sending');
    // back in the queue for the next worker, no attempt spent
    const job = await queue(QUEUE.broadcast).getJob(jobId.broadcast(created.id, 1));
    expect(['delayed', 'waiting']).toContain(await job!.getState());
    expect(job!.attemptsMade).toBe(0);

    const next = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'info' });
    try {
      await waitFor(
        () => db().broadcast.findUniqueOrThrow({ where: { id: created.id } }).then((b) => b.status === 'sent'),
        { timeout: 60_000, what: 'the broadcast sent by the next worker' },
      );
      next.child.kill('SIGTERM');
      expect(await next.exited).toBe(0);
    } finally {
      if (next.child.exitCode === null) next.child.kill('SIGKILL');
    }
    expect(copies()).toHaveLength(40);
    expect(new Set(copies()).size).toBe(40);
  }, 120_000);
});
