import type { Job, Queue } from 'bullmq';
import { queueBroadcastJob } from '../broadcasts/service';
import type { Db } from '../db';
import { logger } from '../logger';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';
import { WEBHOOK_ATTEMPTS } from '../webhooks/deliver';

/**
 * The rule of docs/reliability.md: every piece of pending work is a row in Postgres with its due time, and Redis only
 * carries it. These passes rebuild, from the rows, the jobs of the queues whose work can wait in Redis for long
 * (webhook retries, scheduled and running broadcasts); deliveries have their own (delivery/reconcile.ts). A row is
 * looked at once it is OVERDUE_AFTER_MS past due: its job should have run by then, so a job that is missing (Redis
 * lost it) or finished (it ended without moving the row) is added again, due at once. A job waiting, delayed or
 * running is left to it. A future due time is rebuilt when it comes, so a retry goes out at its time, give or take
 * this margin and the housekeeping interval.
 */
export const OVERDUE_AFTER_MS = 10_000;
const PAGE = 1_000;

/** What a rebuild pass did: jobs added again, and rows whose job was found on its way. */
export interface Rebuilt {
  webhooks: number;
  broadcasts: number;
}

/** The job's state, or `lost` when Redis does not have it; a finished job is removed so its id can be used again. */
async function jobState(q: Queue, id: string): Promise<'lost' | 'busy'> {
  const job: Job | undefined = await q.getJob(id);
  if (!job) return 'lost';
  const state = await job.getState();
  if (state === 'completed' || state === 'failed' || state === 'unknown') {
    return (await job.remove().then(() => true, () => false)) ? 'lost' : 'busy';
  }
  return 'busy';
}

/** Webhook deliveries due (webhook_jobs) whose job Redis no longer carries: added again with the attempts they had. */
export async function rebuildWebhookJobs(db: Db, now = new Date()): Promise<number> {
  const webhooks = queue(QUEUE.webhook);
  const due = await db.webhookJob.findMany({
    where: { dueAt: { lt: new Date(now.getTime() - OVERDUE_AFTER_MS) } },
    orderBy: { dueAt: 'asc' },
    take: PAGE,
  });
  let rebuilt = 0;
  for (const row of due) {
    const id = jobId.webhook(row.eventId, row.webhookId);
    if ((await jobState(webhooks, id)) === 'busy') continue;
    // read again after the job's state: a job that finished between the two reads deleted or moved its row before it
    // finished (webhooks/deliver.ts), and adding it again would deliver the event twice
    const still = await db.webhookJob.findUnique({ where: { eventId_webhookId: { eventId: row.eventId, webhookId: row.webhookId } } });
    if (!still || still.attempts !== row.attempts || still.dueAt.getTime() !== row.dueAt.getTime()) continue;
    await webhooks.add(
      QUEUE.webhook,
      { eventId: row.eventId, webhookId: row.webhookId, attemptsBefore: row.attempts },
      { ...JOB_OPTIONS.webhook, attempts: Math.max(1, WEBHOOK_ATTEMPTS - row.attempts), jobId: id },
    );
    rebuilt++;
  }
  return rebuilt;
}

/** Broadcasts due to run (scheduled past send_at, or sending) whose current run's job Redis no longer carries. */
export async function rebuildBroadcastJobs(db: Db, now = new Date()): Promise<number> {
  const broadcasts = queue(QUEUE.broadcast);
  const overdue = new Date(now.getTime() - OVERDUE_AFTER_MS);
  const due = await db.broadcast.findMany({
    where: { OR: [{ status: 'scheduled', sendAt: { lt: overdue } }, { status: 'sending', updatedAt: { lt: overdue } }] },
    select: { id: true, runs: true },
    take: PAGE,
  });
  let rebuilt = 0;
  for (const b of due) {
    if ((await jobState(broadcasts, jobId.broadcast(b.id, b.runs))) === 'busy') continue;
    await queueBroadcastJob(b.id, b.runs);
    rebuilt++;
  }
  return rebuilt;
}

/** Both passes, for the worker's `reconcile` housekeeping task. */
export async function rebuildLostJobs(db: Db, now = new Date()): Promise<Rebuilt> {
  const rebuilt = { webhooks: await rebuildWebhookJobs(db, now), broadcasts: await rebuildBroadcastJobs(db, now) };
  if (rebuilt.webhooks || rebuilt.broadcasts) logger.info(rebuilt, 'reconciler rebuilt jobs Redis did not carry');
  return rebuilt;
}
