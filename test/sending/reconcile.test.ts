import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { reconcileDeliveries, STALE_AFTER_MS } from '../../apps/core/src/delivery/reconcile';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { HOLDER, HOLDER_TTL_MS, liveHolders, startHolderBeacon } from '../../apps/core/src/delivery/lease';
import { DISPATCH, QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { redis, rkey } from '../../apps/core/src/redis';
import { waitFor } from '../helpers/wait';
import { asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/** Catch-up after Redis lost its data: no worker runs here, so the jobs the reconciler adds stay in Redis to be read. */
const ctx = useApi();

async function strand(tenant: Awaited<ReturnType<typeof makeTenant>>, count: number, enqueuedAgoMs: number | null): Promise<string[]> {
  const ids = Array.from({ length: count }, () => crypto.randomUUID());
  await db().message.createMany({
    data: ids.map((id) => ({
      id,
      accountId: tenant.account.id,
      mailboxId: tenant.mailbox.id,
      kind: 'transactional' as const,
      to: `r-${id.slice(0, 8)}@example.org`,
      subject: 'Stranded',
      messageIdHeader: `<${id}@example.com>`,
      enqueuedAt: enqueuedAgoMs === null ? null : new Date(Date.now() - enqueuedAgoMs),
    })),
  });
  return ids;
}

it('re-queues the whole backlog Redis lost in one run, and rows marked queued half a minute ago whose job is gone', async () => {
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:9' });
  // 1,200 never queued (more than the 500 a run took before) and 30 whose mark is a little older than the staleness
  // (before: 5 minutes), as after Redis came back empty mid-drain
  const never = await strand(tenant, 1200, null);
  const lost = await strand(tenant, 30, STALE_AFTER_MS + 5_000);
  const fresh = await strand(tenant, 5, 1_000);
  const status = await asAdmin(ctx.api).get('/admin/api/delivery/status');
  expect(status.status).toBe(200);
  expect(status.body).toMatchObject({ ok: true, byStatus: { queued: 1235, sent: 0 }, notEnqueued: 1200, expiredLeases: 0 });
  expect(status.body.oldestQueuedSeconds).toBeGreaterThanOrEqual(0);

  expect(await reconcileDeliveries(db())).toEqual({ requeued: 1230, onTheirWay: 0, held: 0 });
  for (const id of [never[0]!, never[1199]!, lost[0]!, lost[29]!]) expect(await queue(QUEUE.delivery).getJob(jobId.delivery(id))).toBeDefined();
  // a fresh mark is the API's own queueing, still on its way: left alone
  expect(await queue(QUEUE.delivery).getJob(jobId.delivery(fresh[0]!))).toBeUndefined();
  expect(await db().message.count({ where: { enqueuedAt: null } })).toBe(0);
  // the next run finds every job there
  expect(await reconcileDeliveries(db(), new Date(Date.now() + STALE_AFTER_MS + 1_000))).toEqual({ requeued: 5, onTheirWay: 1230, held: 0 });
});

it('leaves rows whose batch job still waits to it, and queues again only those in no job', async () => {
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:9' });
  // the API queues the rows of a batch as one dispatch job (outbox.ts); a worker that starts behind a backlog finds
  // their marks older than the staleness: each used to be queued a second time, its update waiting on the claims
  const batched = await strand(tenant, 40, STALE_AFTER_MS + 5_000);
  const alone = await strand(tenant, 3, STALE_AFTER_MS + 5_000);
  await queue(QUEUE.delivery).add(DISPATCH, { messages: batched.map((id) => ({ id, notBefore: null })) }, { jobId: jobId.dispatch(batched[0]!) });

  expect(await reconcileDeliveries(db())).toEqual({ requeued: 3, onTheirWay: 40, held: 0 });
  for (const id of alone) expect(await queue(QUEUE.delivery).getJob(jobId.delivery(id))).toBeDefined();
  for (const id of [batched[0]!, batched[39]!]) expect(await queue(QUEUE.delivery).getJob(jobId.delivery(id))).toBeUndefined();
  // their marks are fresh again: the next run does not look at them
  const marks = await db().message.findMany({ where: { id: { in: batched } }, select: { enqueuedAt: true } });
  expect(marks.every((m) => Date.now() - m.enqueuedAt!.getTime() < STALE_AFTER_MS)).toBe(true);

  // the batch job gone (Redis lost it): its rows are queued each on its own
  await (await queue(QUEUE.delivery).getJob(jobId.dispatch(batched[0]!)))!.remove();
  expect(await reconcileDeliveries(db(), new Date(Date.now() + STALE_AFTER_MS + 1_000))).toMatchObject({ requeued: 40 });
});

it("puts a dead worker's rows at the head of the queue, ahead of the backlog already waiting", async () => {
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:9' });
  await strand(tenant, 20, null);
  await reconcileDeliveries(db());
  const waiting = await queue(QUEUE.delivery).getWaitingCount();
  expect(waiting).toBeGreaterThanOrEqual(20);
  // a row a worker claimed and then died holding: 'sending', its lease run out past the grace
  const [dead] = await strand(tenant, 1, 0);
  await db().message.update({ where: { id: dead! }, data: { status: 'sending', lockedUntil: new Date(Date.now() - 60_000) } });
  expect(await reconcileDeliveries(db())).toEqual({ requeued: 1, onTheirWay: 0, held: 0 });
  const [next] = await queue(QUEUE.delivery).getWaiting(0, 0);
  expect(next?.id).toBe(jobId.delivery(dead!));
  expect(await queue(QUEUE.delivery).getWaitingCount()).toBe(waiting + 1);
});

it("leaves a row whose lease ran out to its holder while the holder's beacon lives, and takes it back once the beacon is gone", async () => {
  // Postgres away longer than the lease: the worker holds the SMTP server's 250 in memory, its "sent" mark waiting
  // for Postgres; the lease in the row ran out meanwhile. Re-queued then, the row would be claimed and sent twice.
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:9' });
  const [row] = await strand(tenant, 1, 0);
  await db().message.update({ where: { id: row! }, data: { status: 'sending', lockedUntil: new Date(Date.now() - 60_000), lockedBy: 'worker-b:42:cafe' } });
  await redis().set(rkey('holders', 'worker-b:42:cafe'), '1', 'PX', HOLDER_TTL_MS);
  expect(await reconcileDeliveries(db())).toMatchObject({ requeued: 0, held: 1 });
  expect(await queue(QUEUE.delivery).getJob(jobId.delivery(row!))).toBeUndefined();
  expect(await db().message.findUniqueOrThrow({ where: { id: row! } })).toMatchObject({ status: 'sending', lockedBy: 'worker-b:42:cafe' });

  // the worker died: its beacon expires, and the row is taken back at the next run
  await redis().del(rkey('holders', 'worker-b:42:cafe'));
  expect(await reconcileDeliveries(db())).toMatchObject({ requeued: 1, held: 0 });
  expect(await queue(QUEUE.delivery).getJob(jobId.delivery(row!))).toBeDefined();
});

it('a claim names this process in the row, and its beacon is what the reconciler reads', async () => {
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:9' });
  const [row] = await strand(tenant, 1, 0);
  const claimed = await new FastClaims(db(), deliveryRegistrations().kinds).claimUnguarded(row!, 30_000, []);
  expect(claimed?.lockedBy).toBe(HOLDER);
  expect(await db().message.findUniqueOrThrow({ where: { id: row! } })).toMatchObject({ status: 'sending', lockedBy: HOLDER });
  expect(await liveHolders([HOLDER])).toEqual(new Set());
  const stop = startHolderBeacon();
  try {
    await waitFor(async () => (await liveHolders([HOLDER])).has(HOLDER));
    expect(await redis().pttl(rkey('holders', HOLDER))).toBeGreaterThan(HOLDER_TTL_MS - 5_000);
  } finally {
    stop();
  }
  await waitFor(async () => !(await liveHolders([HOLDER])).has(HOLDER));
});
