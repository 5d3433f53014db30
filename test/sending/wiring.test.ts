import { db } from '../../apps/core/src/db';
import { createDelivery } from '../../apps/core/src/delivery/deliver';
import { storeMessages, type OutgoingEmail } from '../../apps/core/src/delivery/outbox';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { QUEUE, queue } from '../../apps/core/src/queues';
import { createWorkers } from '../../apps/worker/src/workers';
import { makeList, makeTenant } from '../helpers/factories';
import { runTs, type Proc } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitForStatus } from './helpers';

/**
 * The worker as it is really wired: apps/worker/src/main.ts run as a process, nothing registered by the test. A guard
 * left out of main's wiring sends what it should cancel; housekeeping kept only in Redis never runs here, since the
 * rows are written with no job at all and only the worker's own reconcile timer can queue them.
 */
jest.setTimeout(90_000);

const sink = new SmtpSink();
let worker: Proc | undefined;
beforeAll(() => sink.start());
afterAll(async () => {
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await sink.stop();
});

it('deliveryRegistrations() guards every guarded kind', () => {
  expect(Object.keys(deliveryRegistrations().kinds.guards).sort()).toEqual(['confirmation', 'sequence', 'series']);
});

it("every queue's worker looks for a dead worker's jobs every 5 s, so they run again about when its leases run out", async () => {
  const workers = createWorkers({ db: db(), delivery: createDelivery(db(), deliveryRegistrations()), concurrency: 1 });
  try {
    const opts = Object.fromEntries(workers.map((w) => [w.name, { stalledInterval: w.opts.stalledInterval, lockDuration: w.opts.lockDuration }]));
    expect(Object.keys(opts).sort()).toEqual(Object.values(QUEUE).sort());
    for (const name of Object.values(QUEUE)) {
      expect(opts[name]).toEqual({ stalledInterval: 5_000, lockDuration: name === QUEUE.webhook ? 15_000 : 30_000 });
    }
  } finally {
    await Promise.all(workers.map((w) => w.close()));
  }
});

it("the worker's main cancels what its guards refuse and delivers the rest, queued by its own reconcile timer", async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const list = await makeList(tenant.account.id, tenant.mailbox.id);
  const gone = await db().subscriber.create({ data: { listId: list.id, email: 'gone@example.org', status: 'unsubscribed' } });
  const email = (over: Partial<OutgoingEmail>): OutgoingEmail => ({
    accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'transactional', to: 'x@example.org', subject: 'Hi', text: 'x', ...over,
  });
  // written as after a crash before queueing: no enqueued mark, no job in Redis, no schedule in Redis either
  const [confirmation, step, plain] = await db().$transaction((tx) =>
    storeMessages(tx, [
      email({ kind: 'confirmation', to: 'gone@example.org', subscriberId: gone.id }),
      email({ kind: 'sequence', to: 'step@example.org', step: 1 }),
      email({ to: 'plain@example.org' }),
    ]),
  );
  worker = runTs('apps/worker/src/main.ts', [], { WORKER_CONCURRENCY: '2' });

  expect((await waitForStatus(confirmation!.id!, ['cancelled', 'sent'], 60_000)).lastError).toBe('the subscriber is unsubscribed');
  expect((await waitForStatus(step!.id!, ['cancelled', 'sent'], 60_000)).lastError).toBe('the prospect was deleted');
  await waitForStatus(plain!.id!, ['sent'], 60_000);
  expect(sink.to('gone@example.org')).toHaveLength(0);
  expect(sink.to('step@example.org')).toHaveLength(0);
  expect(sink.to('plain@example.org')).toHaveLength(1);
  expect(await queue(QUEUE.maintenance).getJobSchedulers()).toEqual([]);
});
