import type { Db } from '../db';
import { within } from '../deadline';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';
import { claimUndispatched, deliveriesFor, eventsPending, insertWebhookJobs, markDispatched } from './repository';

/**
 * The outbox's fan-out: events not yet dispatched become one `webhook` job per (event, enabled endpoint of its
 * account subscribed to its type). Claimed with FOR UPDATE SKIP LOCKED; the deliveries owed (`webhook_jobs` rows) are
 * written and the events marked dispatched in one transaction, and only once it has committed are the jobs added to
 * Redis: a job never runs before its row is there to delete (a job that ran first found no row to delete, and the
 * reconciler, finding the row committed after it, delivered the event a second time). Redis down, or the process
 * dying between the commit and the add: the rows wait in Postgres and the reconciler adds their jobs
 * (recovery/index.ts), with the same deterministic ids.
 */
const BATCH = 500;
const REDIS_WAIT_MS = 10_000;

/** Passes that found events waiting and opened their transaction (a test of the idle pass). */
export interface DispatchStats {
  transactions: number;
}

/**
 * Fans out up to `limit` events; returns how many it took (a full batch means there may be more). `stats`, when given,
 * counts the passes that opened a transaction (the dispatcher's own).
 */
export async function dispatchEvents(db: Db, options: { limit?: number; stats?: DispatchStats } = {}): Promise<number> {
  const limit = options.limit ?? BATCH;
  // most passes find nothing: one statement on the pool then, not an interactive transaction of three statements,
  // four times a second for as long as the worker runs
  if (!(await eventsPending(db))) return 0;
  if (options.stats) options.stats.transactions++;
  const { taken, pairs } = await db.$transaction(
    async (tx) => {
      const events = await claimUndispatched(tx, limit);
      if (!events.length) return { taken: 0, pairs: [] };
      const ids = events.map((e) => e.id);
      const owed = await deliveriesFor(tx, ids);
      // the deliveries to make, in Postgres before Redis: a job Redis loses is rebuilt from these rows
      if (owed.length) await insertWebhookJobs(tx, owed);
      await markDispatched(tx, ids);
      return { taken: events.length, pairs: owed };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
  if (pairs.length) {
    const adding = queue(QUEUE.webhook).addBulk(
      pairs.map((p) => ({
        name: QUEUE.webhook,
        data: { eventId: p.event_id, webhookId: p.webhook_id },
        opts: { ...JOB_OPTIONS.webhook, jobId: jobId.webhook(p.event_id, p.webhook_id) },
      })),
    );
    // Redis away or hanging: the rows are committed, the reconciler adds their jobs (if this add still lands later,
    // the reconciler finds the jobs on their way)
    await within(adding, REDIS_WAIT_MS, 'Redis did not take the webhook jobs');
  }
  return taken;
}

export interface Dispatcher {
  /** this dispatcher's passes that opened a transaction */
  readonly stats: DispatchStats;
  /** runs a pass now instead of at the next tick (tests, or a caller that just wrote events) */
  kick(): void;
  stop(): Promise<void>;
}

/**
 * Runs the fan-out in the worker: a pass every `everyMs` (and at once again while passes come back full). Postgres
 * is the truth, so a pass that fails (Redis or Postgres away) is logged and simply tried again at the next tick.
 */
export function startDispatcher(db: Db, options: { everyMs?: number } = {}): Dispatcher {
  const everyMs = options.everyMs ?? 250;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const stats: DispatchStats = { transactions: 0 };
  const loop = (async () => {
    while (!stopped) {
      let full = false;
      try {
        full = (await dispatchEvents(db, { stats })) === BATCH;
      } catch (err) {
        if (!noteOutage(err)) logger.warn({ err: (err as Error).message }, 'event dispatch failed; trying again');
      }
      if (full || stopped) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, everyMs);
      });
    }
  })();
  return {
    stats,
    kick: () => wake?.(),
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}
