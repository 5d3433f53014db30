import type { Db, Tx } from '../db';
import { logger } from '../logger';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';
import { updateProspects } from './changes';
import { gapSql, effectiveLimitSql } from './limits';
import { firstStepAt } from './timing';

/**
 * DB-driven scheduling: `next_at` is the truth. The periodic `schedule` task (and a kick right after adds) claims due
 * prospects with FOR UPDATE SKIP LOCKED, so two schedulers never queue the same rows, and queues one job per prospect
 * and step. Job ids are deterministic, so a job already waiting or delayed is not queued twice; a job that finished
 * without moving the prospect on (it found the campaign paused, say) is replaced, since the row says the step is due.
 * Losing Redis loses nothing: the rows are still due and the next tick queues them again.
 */
export interface DueStep {
  prospectId: number;
  /** the step to write: prospect.step + 1 (one past the last step means "close as no_reply") */
  step: number;
  nextAt: Date | null;
}

const BATCH = 500;
const BATCHES_PER_TICK = 4;

/**
 * The due steps that can go out now, claimed in one statement whose cost follows that work, not the backlog:
 * - a mailbox's free sequence slots are read once (0 at its daily cap or inside its gap; 1 when it has a gap; else
 *   what is left of its day), less the steps already queued for it and not yet written, so a mailbox that cannot
 *   send is passed over in one step, not row by row;
 * - each mailbox gives at most its free slots of its campaigns' due prospects, oldest first, and at most its share of
 *   the batch, so one claim reads about a batch of rows however many campaigns are due;
 * - a step that closes a prospect (the wait after the last step is over) needs no slot and is always taken.
 * A claimed row is marked `queued_at`; until its step job moves `next_at` on, the claim passes it over, so a backlog
 * waiting for the workers is not claimed and queued again every tick. A mark older than QUEUED_FRESH is taken as
 * lost (Redis lost the job) and the row is claimed again. The step job claims its mailbox slot for real (limits.ts).
 * Only the rows finally taken are locked (SKIP LOCKED): another scheduler at the same moment never gets them.
 */
const QUEUED_FRESH = "interval '60 seconds'";
const UNQUEUED = `(p.queued_at IS NULL OR p.queued_at < p.next_at OR p.queued_at < now() - ${QUEUED_FRESH})`;
export const CLAIM_DUE = `
WITH running AS (
  SELECT c.id, c.mailbox_id, (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps
  FROM campaigns c WHERE c.status = 'running' AND ($1::int IS NULL OR c.id = $1::int)
), queued AS (
  -- read through the queued_at index: the rows marked in the last minute, not the due backlog
  SELECT r.mailbox_id, count(*)::int AS n FROM prospects p JOIN running r ON r.id = p.campaign_id
  WHERE p.queued_at >= now() - ${QUEUED_FRESH} AND p.queued_at >= p.next_at
    AND p.status IN ('ready', 'writing', 'later') AND p.next_at <= now() AND p.step < r.steps
  GROUP BY r.mailbox_id
), free AS (
  SELECT m.id, greatest(0, CASE
      WHEN m.cap <= 0 THEN 0
      WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date AND m.sequence_count >= m.cap THEN 0
      WHEN m.gap_seconds > 0 AND m.sequence_last_at > now() - make_interval(secs => ${gapSql('m')}) THEN 0
      WHEN m.gap_seconds > 0 THEN 1
      ELSE m.cap - CASE WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date THEN m.sequence_count ELSE 0 END
    END - coalesce(q.n, 0)) AS slots
  FROM (SELECT mb.*, ${effectiveLimitSql('mb', 'now()')} AS cap FROM mailboxes mb WHERE mb.id IN (SELECT mailbox_id FROM running)) m
  LEFT JOIN queued q ON q.mailbox_id = m.id
), share AS (
  SELECT $2::int / greatest(1, count(*) FILTER (WHERE slots > 0))::int + 1 AS rows FROM free
), open_steps AS (
  -- each running campaign of a mailbox with free slots gives its oldest due rows through the (campaign_id, next_at)
  -- index, at most what its mailbox may take: rows read follow the slots, not the backlog
  SELECT x.id, x.next_at, r.mailbox_id, least(f.slots, share.rows) AS cap,
         row_number() OVER (PARTITION BY r.mailbox_id ORDER BY x.next_at, x.id) AS rank
  FROM running r JOIN free f ON f.id = r.mailbox_id AND f.slots > 0 CROSS JOIN share
  CROSS JOIN LATERAL (
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = r.id AND p.next_at <= now() AND p.status IN ('ready', 'writing', 'later') AND p.step < r.steps AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT least(f.slots, share.rows)
  ) x
), candidates AS (
  SELECT id, next_at, mailbox_id, false AS closing FROM open_steps WHERE rank <= cap
  UNION ALL
  SELECT p.id, p.next_at, r.mailbox_id, true
  FROM running r
  CROSS JOIN LATERAL (
    -- through the (campaign_id, status, step) index: only the open rows past the last step are read
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = r.id AND p.status = ANY('{ready,writing,later}'::"ProspectStatus"[]) AND p.step >= r.steps
      AND p.next_at <= now() AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT $2::int
  ) p
), taken AS (
  -- by primary key: a join here let the planner hash the whole table
  SELECT p.id FROM prospects p WHERE p.id = ANY(ARRAY(SELECT id FROM candidates ORDER BY next_at LIMIT $2::int))
  FOR UPDATE OF p SKIP LOCKED
)
UPDATE prospects p SET queued_at = now() FROM taken t WHERE p.id = t.id
RETURNING p.id, p.step, p.next_at`;

/**
 * Claims due prospects and hands them to `whileClaimed` before the claim's transaction ends: while it runs (queueing
 * the jobs), another scheduler skips these rows instead of queueing them too.
 */
export async function claimDueSteps(
  db: Db,
  options: { campaignId?: number; limit?: number } = {},
  whileClaimed: (due: DueStep[]) => Promise<void> = async () => undefined,
): Promise<DueStep[]> {
  const limit = options.limit ?? BATCH;
  const campaignId = options.campaignId ?? null;
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRawUnsafe<{ id: number; step: number; next_at: Date }[]>(CLAIM_DUE, campaignId, limit);
    rows.sort((a, b) => a.next_at.getTime() - b.next_at.getTime() || a.id - b.id);
    const due = rows.map((r) => ({ prospectId: r.id, step: r.step + 1, nextAt: r.next_at }));
    await whileClaimed(due);
    return due;
  }, { timeout: 30_000, maxWait: 10_000 });
}

/** Queues step jobs, each delayed until its `next_at`. Safe to call for a step already queued. */
export async function queueSteps(steps: DueStep[]): Promise<void> {
  if (!steps.length) return;
  const q = queue(QUEUE.sequence);
  const now = Date.now();
  await Promise.all(
    steps.map(async (s) => {
      const id = jobId.sequence(s.prospectId, s.step);
      const existing = await q.getJob(id);
      if (existing) {
        const state = await existing.getState();
        if (state !== 'completed' && state !== 'failed') return;
        await existing.remove().catch(() => undefined);
      }
      await q.add(QUEUE.sequence, { prospectId: s.prospectId, step: s.step }, {
        ...JOB_OPTIONS.sequence,
        jobId: id,
        delay: s.nextAt ? Math.max(0, s.nextAt.getTime() - now) : undefined,
      });
    }),
  );
}

/**
 * The `schedule` maintenance task: claims and queues the due steps that can go out, batch by batch, until a claim
 * comes back short. Returns how many it queued.
 */
export async function scheduleDueSteps(db: Db, options: { campaignId?: number } = {}): Promise<number> {
  let total = 0;
  // a tick queues at most BATCHES_PER_TICK batches (more than a worker writes in the 5 s until the next): a big
  // backlog is fed to the workers as they go, and a stopping worker never waits for a long tick
  for (let batch = 0; batch < BATCHES_PER_TICK; batch++) {
    const due = await claimDueSteps(db, { ...options, limit: BATCH }, queueSteps);
    total += due.length;
    if (due.length < BATCH) break;
  }
  return total;
}

/** After a request scheduled steps: queue their jobs now (delayed to their next_at); the periodic task is the safety net. */
export async function queueStepsSoon(steps: DueStep[]): Promise<void> {
  try {
    await queueSteps(steps);
  } catch (err) {
    logger.warn({ err: (err as Error).message, steps: steps.length }, 'could not queue steps; the schedule task will');
  }
}

/**
 * A campaign starts (or resumes) running: its new prospects with an address become ready with step 1 scheduled,
 * site-only ones wait in hold. Prospects already under way keep their place and continue where they stopped.
 */
export async function startCampaignProspects(tx: Tx, campaignId: number, now = new Date()): Promise<void> {
  const first = await tx.campaignStep.findFirst({ where: { campaignId }, orderBy: { position: 'asc' } });
  if (!first) return;
  await updateProspects(tx, { campaignId, status: 'new', email: { not: null } }, { status: 'ready', nextAt: firstStepAt(now, first.delayHours) });
  await updateProspects(tx, { campaignId, status: 'new', email: null }, { status: 'hold', nextAt: null });
}
