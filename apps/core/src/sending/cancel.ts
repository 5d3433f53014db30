import type { Db, Tx } from '../db';
import { addDeliveryJobs } from '../delivery/outbox';
import { markEnqueued, markNotEnqueued } from '../delivery/repository';
import { isFinalStatus } from '../message-status';
import { Conflict, NotFound } from '../errors';
import { emitMessageEvent } from '../events/messages';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { jobId, QUEUE, queue } from '../queues';
import { withinRedisDeadline } from '../redis';
import { findSend, type SendAnswer } from './accept';
import { cancelUnclaimedCopies, lockSendCopies, moveSend } from './repository';

/**
 * Withdrawing a whole send (docs/sending.md, "Cancel and reschedule"): its copies are cancelled, or moved to another
 * time, while no worker has claimed any of them. Postgres decides: the copies are locked, and the delivery's claim
 * takes only a queued or deferred row (so a cancelled copy is never sent, whatever job fires later, and a moved one is
 * never sent before its new time: the claim reads not_before). The jobs in Redis are tidied after the commit, at best
 * effort; a lost one is rebuilt by the reconciler from the rows. A single copy's retry or cancel by the operator is
 * sending/message-actions.ts's.
 */

export type SendView = Omit<SendAnswer, 'ok'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function lockedCopies(tx: Tx, accountId: number, sendId: string) {
  const send = UUID.test(sendId) ? await tx.send.findFirst({ where: { id: sendId, accountId }, select: { id: true } }) : null;
  if (!send) throw new NotFound(`no send with id ${sendId}`);
  return lockSendCopies(tx, send.id);
}

async function viewOf(db: Db, accountId: number, sendId: string): Promise<SendView> {
  const { ok: _ok, ...send } = await findSend(db, accountId, sendId);
  return send;
}

/**
 * POST /api/v1/send/:id/cancel: every copy not yet claimed becomes `cancelled` (event `message.cancelled` each), in
 * one transaction. 409 when a copy is being sent or already went (sent, failed, bounced): nothing is changed then. A
 * send already cancelled answers as it is.
 */
export async function cancelSend(db: Db, accountId: number, sendId: string): Promise<SendView> {
  const cancelled = await db.$transaction(async (tx) => {
    const copies = await lockedCopies(tx, accountId, sendId);
    const gone = copies.filter((c) => c.status === 'sending' || (isFinalStatus(c.status) && c.status !== 'cancelled'));
    if (gone.length) throw new Conflict(`the send cannot be cancelled: ${gone.length} of its ${copies.length} messages ${gone.length === 1 ? 'is' : 'are'} already being sent or sent`);
    const ids = await cancelUnclaimedCopies(tx, sendId);
    for (const id of ids) await emitMessageEvent(tx, id, 'message.cancelled');
    return ids;
  });
  // the delayed jobs would find the rows cancelled and do nothing; removing them only spares Redis the wait, and a
  // Redis away or hanging is given REDIS_DEADLINE_MS of the answer's time, no more
  const removed = Promise.all(cancelled.map((id) => queue(QUEUE.delivery).remove(jobId.delivery(id))));
  await withinRedisDeadline(removed).catch((err: unknown) => noteOutage(err));
  return viewOf(db, accountId, sendId);
}

/**
 * PATCH /api/v1/send/:id {send_at}: moves a send whose copies are all still queued (none tried yet) to another time
 * (null or a time past: now). 409 once a copy was tried. The copies' delivery jobs follow after the commit.
 */
export async function rescheduleSend(db: Db, accountId: number, sendId: string, sendAt: Date | null): Promise<SendView> {
  const at = sendAt && sendAt.getTime() > Date.now() ? sendAt : null;
  const ids = await db.$transaction(async (tx) => {
    const copies = await lockedCopies(tx, accountId, sendId);
    const started = copies.filter((c) => c.status !== 'queued');
    if (started.length) throw new Conflict(`the send cannot be moved: ${started.length} of its ${copies.length} messages ${started.length === 1 ? 'is' : 'are'} no longer queued`);
    await moveSend(tx, sendId, at);
    return copies.map((c) => c.id);
  });
  await moveDeliveryJobs(db, ids.map((id) => ({ id, notBefore: at })));
  return viewOf(db, accountId, sendId);
}

/**
 * Puts each copy's delivery job at its new time: a delayed job is moved; a missing or finished one is added again
 * (a job of a `dispatch` batch not yet handed on is added under the same id later and then finds this one). A job
 * that is waiting or running finds the row's not_before when it claims, and waits for it (delivery processor).
 * Redis away: the rows lose their enqueued mark and the reconciler queues them at their time.
 */
async function moveDeliveryJobs(db: Db, copies: { id: string; notBefore: Date | null }[]): Promise<void> {
  const deliveries = queue(QUEUE.delivery);
  const move = async () => {
    const readd: typeof copies = [];
    for (const copy of copies) {
      const job = await deliveries.getJob(jobId.delivery(copy.id));
      const state = job ? await job.getState() : 'unknown';
      const delay = copy.notBefore ? Math.max(0, copy.notBefore.getTime() - Date.now()) : 0;
      if (state === 'delayed') await job!.changeDelay(delay);
      else if (state === 'unknown') readd.push(copy);
      else if (state === 'completed' || state === 'failed') {
        await job!.remove();
        readd.push(copy);
      }
    }
    await addDeliveryJobs(readd);
    return readd;
  };
  try {
    // a Redis that hangs is given REDIS_DEADLINE_MS of the answer's time; the rows are the reconciler's after that
    const readd = await withinRedisDeadline(move());
    await markEnqueued(db, readd.map((c) => c.id));
  } catch (err) {
    noteOutage(err);
    logger.debug({ err: (err as Error).message, messages: copies.length }, 'could not move the delivery jobs now; the reconciler will');
    await markNotEnqueued(db, copies.map((c) => c.id)).catch(() => undefined);
  }
}
