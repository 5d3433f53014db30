import { afterCommit } from '../after-commit';
import type { Db } from '../db';
import { addDeliveryJobs } from '../delivery/outbox';
import { Conflict, NotFound } from '../errors';
import { logger } from '../logger';
import { QUEUE, jobId, queue } from '../queues';
import { withinRedisDeadline } from '../redis';
import { noteOutage } from '../outage';
import { Joi } from '../validate';
import { announceFinished } from './finished';

/**
 * The operator's two actions on one message (admin API, console, CLI): try it again now, or cancel it before it goes
 * out. Each changes the row by one conditional update, so it cannot race a worker's claim: the claim takes rows
 * `queued` or `deferred`, and whichever update comes first wins; the other finds the row changed and answers 409.
 */

/** A message's id in a path: a UUID. */
export const messageIdParam = Joi.string()
  .trim()
  .lowercase()
  .pattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  .required()
  .label('id')
  .messages({ 'string.pattern.base': 'id must be a message id (a UUID)' });

export interface MessageAction {
  id: string;
  status: string;
}

/** Which actions a message in `status` takes (the console shows only those buttons). */
export const actionsFor = (status: string): { retry: boolean; cancel: boolean } => ({
  retry: status === 'deferred' || status === 'failed',
  cancel: status === 'queued' || status === 'deferred',
});

async function current(db: Db, id: string): Promise<{ id: string; status: string; notBefore: Date | null }> {
  const row = await db.message.findUnique({ where: { id }, select: { id: true, status: true, notBefore: true } });
  if (!row) throw new NotFound(`message ${id} not found`);
  return row;
}

/**
 * Retry now: a `deferred` message's waiting job runs at once (instead of at the end of its backoff); a `failed` one
 * goes back to `queued` with a new job and a new budget of attempts. Anything else is 409: a queued or sending message
 * is already on its way, and sent, bounced or cancelled are ends no retry changes. A message held for a future
 * `send_at` keeps it.
 */
export async function retryMessage(db: Db, id: string): Promise<MessageAction> {
  const before = await current(db, id);
  if (!actionsFor(before.status).retry) throw new Conflict(`message ${id} is ${before.status}: only a deferred or failed message can be retried`);
  const changed = await db.message.updateMany({
    where: { id, status: before.status as 'deferred' | 'failed' },
    data: before.status === 'failed' ? { status: 'queued', lockedUntil: null, lockedBy: null, enqueuedAt: new Date() } : { enqueuedAt: new Date() },
  });
  if (changed.count !== 1) {
    const now = await current(db, id);
    throw new Conflict(`message ${id} is ${now.status} now: a worker took it meanwhile`);
  }
  const requeue = async () => {
    const job = await queue(QUEUE.delivery).getJob(jobId.delivery(id));
    const state = job ? await job.getState() : 'unknown';
    if (job && state === 'delayed') {
      // its backoff ends now (a job delayed by a future send_at is not: that row would be `queued`)
      await job.promote().catch((err: Error) => logger.debug({ message: id, err: err.message }, 'the delayed job moved on by itself'));
    } else if (state === 'waiting' || state === 'active' || state === 'prioritized') {
      // already running or about to: nothing to add
    } else {
      // a finished job would keep its id from being queued again (ids are deterministic): it goes first
      if (job) await job.remove().catch(() => undefined);
      await addDeliveryJobs([{ id, notBefore: before.notBefore }], { first: true });
    }
  };
  // once the row is committed (enqueued just now): a Redis away or hanging leaves the job to the reconciler after its staleness
  await afterCommit(db, () =>
    withinRedisDeadline(requeue()).catch((err: unknown) => {
      if (!noteOutage(err)) throw err;
    }),
  );
  logger.info({ message: id, was: before.status }, 'message retried by the operator');
  return { id, status: before.status === 'failed' ? 'queued' : 'deferred' };
}

/**
 * Cancel: a message not yet claimed (`queued` or `deferred`) becomes `cancelled` and is never sent; its job, when it
 * runs, finds the row final and does nothing. A claimed (`sending`) message may already be on the wire: 409, as for
 * any message that has reached its end.
 */
export async function cancelMessage(db: Db, id: string): Promise<MessageAction> {
  const before = await current(db, id);
  if (!actionsFor(before.status).cancel) {
    throw new Conflict(before.status === 'sending' ? `message ${id} is being sent now: it can no longer be cancelled` : `message ${id} is already ${before.status}`);
  }
  const changed = await db.message.updateMany({
    where: { id, status: { in: ['queued', 'deferred'] } },
    data: { status: 'cancelled', lastError: 'cancelled by the operator', lockedUntil: null, lockedBy: null },
  });
  if (changed.count !== 1) {
    const now = await current(db, id);
    throw new Conflict(`message ${id} is ${now.status} now: a worker took it meanwhile`);
  }
  // the job would find the row cancelled and do nothing: removing it is tidying, REDIS_DEADLINE_MS at most
  const tidy = async () => {
    const job = await queue(QUEUE.delivery).getJob(jobId.delivery(id));
    if (job && (await job.getState()) !== 'active') await job.remove().catch(() => undefined);
  };
  await afterCommit(db, async () => {
    await withinRedisDeadline(tidy()).catch((err: unknown) => noteOutage(err));
    announceFinished([id]);
  });
  logger.info({ message: id, was: before.status }, 'message cancelled by the operator');
  return { id, status: 'cancelled' };
}
