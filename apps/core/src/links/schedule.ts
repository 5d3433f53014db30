import type { Db } from '../db';
import { logger } from '../logger';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';
import { claimDueLinkChecks } from './repository';

/**
 * Scheduling the link checks of docs/links.md (apart from check.ts, so the API does not load the fetcher and
 * the HTML parser). `link_check_at` on the prospect is the truth: set when the caller gives the
 * page's `url`, moved on by every check. The `links` maintenance task (and a kick right after the caller's report)
 * claims due prospects by pushing `link_check_at` a lease ahead in one statement and queues one job per prospect; a
 * job lost with Redis is claimed again when its lease runs out.
 */

/** How long a claimed check may take before another scheduler claims it again. */
const CLAIM_LEASE_MS = 2 * 60_000;
const BATCH = 500;

/**
 * Claims prospects whose check is due (all of them, or one) by moving `link_check_at` a lease ahead, in one statement,
 * and queues a check for each. Returns how many it queued.
 */
export async function queueDueLinkChecks(db: Db, options: { prospectId?: number } = {}): Promise<number> {
  const prospectId = options.prospectId ?? null;
  let total = 0;
  for (;;) {
    const claimed = await claimDueLinkChecks(db, prospectId, CLAIM_LEASE_MS, BATCH);
    if (claimed.length) {
      const q = queue(QUEUE.links);
      await q.addBulk(
        claimed.map((row) => ({
          name: QUEUE.links,
          data: { prospectId: row.id },
          opts: { ...JOB_OPTIONS.links, jobId: jobId.link(row.id, row.link_check_at.getTime()) },
        })),
      );
    }
    total += claimed.length;
    if (claimed.length < BATCH) return total;
  }
}

/** After the caller gave a page: queue its check now rather than at the next tick of the `links` task (the safety net). */
export async function checkLinkSoon(db: Db, prospectId: number): Promise<void> {
  await queueDueLinkChecks(db, { prospectId }).catch((err: Error) =>
    logger.warn({ err: err.message, prospect: prospectId }, 'could not queue the link check now; the links task will'),
  );
}
