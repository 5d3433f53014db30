import { poolTransaction, type Db, type Tx } from '../db';
import { logger } from '../logger';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';
import { updateProspects } from './changes';
import { claimDue } from './repository/claim-due';
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
 * Claims due prospects (one statement, bounded by the free mailbox slots: repository/claim-due.ts claimDue) and hands them to
 * `whileClaimed` before the claim's transaction ends: while it runs (queueing the jobs), another scheduler skips these
 * rows instead of queueing them too.
 */
export async function claimDueSteps(
  db: Db,
  options: { campaignId?: number; limit?: number } = {},
  whileClaimed: (due: DueStep[]) => Promise<void> = async () => undefined,
): Promise<DueStep[]> {
  const limit = options.limit ?? BATCH;
  const campaignId = options.campaignId ?? null;
  return poolTransaction(db, async (query) => {
    const rows = await claimDue(query, campaignId, limit);
    rows.sort((a, b) => a.next_at.getTime() - b.next_at.getTime() || a.id - b.id);
    const due = rows.map((r) => ({ prospectId: r.id, step: r.step + 1, nextAt: r.next_at }));
    await whileClaimed(due);
    return due;
  });
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
        // the row says the step is due but its job still waits for an older time (planned again earlier: replan.ts)
        if (state === 'delayed' && s.nextAt && s.nextAt.getTime() <= now) {
          await existing.promote().catch(() => undefined);
          return;
        }
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
