import type { Db } from '../db';
import { logger } from '../logger';
import { DISPATCH, QUEUE, jobId, queue, type DispatchPayload } from '../queues';
import { liveHolders } from './lease';
import { enqueueDelivery } from './outbox';
import { markStillEnqueued } from './repository';

/**
 * A queued row whose enqueued mark is older than this gets its job looked at: long enough for the API to queue what
 * it just wrote (the rows are written marked), short enough that rows Redis lost go out within a minute.
 */
export const STALE_AFTER_MS = 30_000;
/**
 * A row left `sending` is looked at this long after its lease ran out: a live worker renews its leases every few
 * seconds and writes a kept "sent" mark within a second of Postgres coming back, so it gets this head start.
 */
export const EXPIRED_GRACE_MS = 5_000;
const PAGE = 1_000;
/** One run looks at this many pages at most (a million rows behind would otherwise hold one run for long). */
const MAX_PAGES = 100;
/** Jobs read at most by one run looking for the dispatch batches its rows are in (a page at a time). */
const MAX_DISPATCH_READ = 20_000;
const DISPATCH_PAGE = 500;
/** The states of a job that will still deliver its rows. */
const PENDING = ['active', 'waiting', 'prioritized', 'delayed'] as const;

/**
 * The rows of the dispatch jobs still to run (outbox.ts: the API queues the rows of a batch as one job, named after its
 * first row): such a row has no job of its own, and is on its way all the same. Read once a run, and only when a row
 * has no job of its own, at most MAX_DISPATCH_READ jobs (a row in a batch past them is queued again: delivered once
 * all the same, its claim decides).
 */
async function rowsInDispatches(deliveries: ReturnType<typeof queue>): Promise<Set<string>> {
  const rows = new Set<string>();
  let read = 0;
  for (const state of PENDING) {
    for (let start = 0; read < MAX_DISPATCH_READ; start += DISPATCH_PAGE) {
      const jobs = await deliveries.getJobs(state, start, start + DISPATCH_PAGE - 1, true);
      read += jobs.length;
      for (const job of jobs) {
        if (job?.name === DISPATCH) for (const m of (job.data as DispatchPayload).messages) rows.add(m.id);
      }
      if (jobs.length < DISPATCH_PAGE) break;
    }
  }
  return rows;
}

/**
 * Re-queues messages Postgres holds but Redis does not: rows never queued (Redis was down at accept time, or the
 * process died between commit and enqueue), rows whose job vanished (Redis lost its data), and rows left `sending` by
 * a worker that died (lease expired, and its beacon gone: lease.ts). A row whose job is still waiting, delayed or running is left to it; a finished
 * job whose row is unfinished is replaced under the same deterministic id. Goes through the whole backlog a page at a
 * time, so catching up after Redis lost everything takes one run. Safe to run anywhere and often: a queued job finds
 * a finished row and does nothing.
 */
export async function reconcileDeliveries(db: Db, now = new Date()): Promise<{ requeued: number; onTheirWay: number; held: number }> {
  const deliveries = queue(QUEUE.delivery);
  let requeued = 0;
  let waiting = 0;
  let held = 0;
  let after: { createdAt: Date; id: string } | undefined;
  let inDispatches: Promise<Set<string>> | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const stranded = await db.message.findMany({
      where: {
        AND: [
          {
            OR: [
              { status: { in: ['queued', 'deferred'] }, OR: [{ enqueuedAt: null }, { enqueuedAt: { lt: new Date(now.getTime() - STALE_AFTER_MS) } }] },
              { status: 'sending', lockedUntil: { lt: new Date(now.getTime() - EXPIRED_GRACE_MS) } },
            ],
          },
          after ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] } : {},
          // a mailbox that needs reconnecting holds its rows until it is reconnected (oauth/state.ts releaseWaiting)
          { mailbox: { authStatus: 'active' } },
        ],
      },
      select: { id: true, notBefore: true, createdAt: true, status: true, lockedBy: true },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: PAGE,
    });
    if (!stranded.length) break;
    after = stranded[stranded.length - 1]!;
    // a `sending` row whose holder still beats may have reached the SMTP server, its mark waiting for Postgres (a
    // lease runs out during an outage longer than itself): only the holder's death frees it (lease.ts)
    const alive = await liveHolders(stranded.flatMap((m) => (m.status === 'sending' && m.lockedBy ? [m.lockedBy] : [])));
    const states = await Promise.all(
      stranded.map(async (message) => {
        if (message.status === 'sending' && message.lockedBy && alive.has(message.lockedBy)) return 'held';
        const job = await deliveries.getJob(jobId.delivery(message.id));
        const state = job ? await job.getState() : 'unknown';
        if (state === 'completed' || state === 'failed') return (await job!.remove().then(() => true, () => false)) ? 'requeue' : 'busy';
        // no job of its own: a row of a batch still waiting is on its way (before this, each was queued a second time)
        if (state === 'unknown') return (await (inDispatches ??= rowsInDispatches(deliveries))).has(message.id) ? 'busy' : 'requeue';
        // waiting, delayed, prioritized, or active (a dead worker's job comes back through BullMQ's stalled check)
        return 'busy';
      }),
    );
    const requeue = stranded.filter((_, i) => states[i] === 'requeue');
    const onTheirWay = stranded.filter((_, i) => states[i] === 'busy').map((m) => m.id);
    held += states.filter((s) => s === 'held').length;
    // at the head of the queue: these rows have waited (a lease, a lost Redis) while the backlog behind them had not
    await enqueueDelivery(db, requeue, { first: true });
    if (onTheirWay.length) await markStillEnqueued(db, onTheirWay, now);
    requeued += requeue.length;
    waiting += onTheirWay.length;
    if (stranded.length < PAGE) break;
  }
  if (requeued) logger.info({ requeued }, 'reconciler queued stranded messages');
  if (held) logger.info({ held }, 'reconciler left rows whose lease ran out to their living worker');
  return { requeued, onTheirWay: waiting, held };
}
