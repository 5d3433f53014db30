import { Client } from 'pg';
import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { OVERDUE_AFTER_MS, rebuildWebhookJobs } from '../../apps/core/src/recovery';
import { deliverWebhook } from '../../apps/core/src/webhooks/deliver';
import { dispatchEvents } from '../../apps/core/src/webhooks/dispatch';
import { useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { hook, useReceiver } from './support';

/**
 * Exactly once without a fault: a worker must never run a webhook job whose `webhook_jobs` row is not committed yet.
 * One that did found no row to delete, the row appeared when the fan-out committed, and the reconciler delivered the
 * event again 10 s later, as `attempt: 1` (two workers and a broadcast's load made the window wide enough to hit).
 */
const ctx = useApi();
useMail({ queues: ['webhook'], concurrency: 2 });
const receiver = useReceiver();

async function emit(account: number, email: string): Promise<string> {
  await db().$transaction((tx) => emitEvent(tx, account, 'subscriber.confirmed', { list: 'news', email, status: 'active' }));
  return (await db().event.findFirstOrThrow({ where: { accountId: account, data: { path: ['email'], equals: email } } })).id;
}

it('adds no job to Redis before the fan-out has committed the rows, so the reconciler finds nothing to deliver again', async () => {
  const account = await makeAccount();
  const h = await hook(ctx.api, account.id, receiver);
  const eventId = await emit(account.id, 'slow@reader.org');

  // hold the fan-out's transaction open at its last statement (marking the events dispatched), as a loaded database does
  const holder = new Client({ connectionString: process.env.DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE events IN SHARE MODE');
    const pass = dispatchEvents(db());
    await waitFor(async () => {
      await holder.query('SELECT pg_stat_clear_snapshot()'); // the view is read once per transaction otherwise
      const { rows } = await holder.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE events SET dispatched_at%'`);
      return rows[0].n > 0 ? true : undefined;
    }, { what: 'the fan-out waiting to mark its events' });
    expect(await queue(QUEUE.webhook).getJob(jobId.webhook(eventId, h.id))).toBeUndefined();
    await holder.query('ROLLBACK');
    expect(await pass).toBe(1);
  } finally {
    await holder.end();
  }

  await waitFor(async () => ((await db().webhookJob.count({ where: { eventId } })) === 0 ? true : undefined), { what: 'the delivery done' });
  // the reconciler, once the row would be overdue, finds nothing owed
  expect(await rebuildWebhookJobs(db(), new Date(Date.now() + OVERDUE_AFTER_MS + 1_000))).toBe(0);
  expect(receiver.deliveries.filter((d) => d.id === eventId)).toHaveLength(1);
  expect(await db().webhookDelivery.count({ where: { eventId } })).toBe(1);
});

it('a job run again after its delivery was recorded posts nothing (its webhook_jobs row is gone)', async () => {
  const account = await makeAccount();
  const h = await hook(ctx.api, account.id, receiver);
  const eventId = await emit(account.id, 'again@reader.org');
  expect(await dispatchEvents(db())).toBe(1);
  await waitFor(async () => ((await db().webhookJob.count({ where: { eventId } })) === 0 ? true : undefined), { what: 'the delivery done' });
  expect(receiver.deliveries.filter((d) => d.id === eventId)).toHaveLength(1);

  // as a worker killed after the delivery but before BullMQ completed the job would run it again
  expect(await deliverWebhook(db(), eventId, h.id, 1)).toEqual({ kind: 'dropped', why: 'the delivery has its outcome already' });
  expect(receiver.deliveries.filter((d) => d.id === eventId)).toHaveLength(1);
  expect(await db().webhookDelivery.count({ where: { eventId } })).toBe(1);
});
