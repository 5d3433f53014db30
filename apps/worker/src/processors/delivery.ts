import type { Job } from 'bullmq';
import { db } from '../../../core/src/db';
import { deliverBatch, deliverMessage, type DeliveryOutcome } from '../../../core/src/delivery/deliver';
import type { PreSendGuards } from '../../../core/src/delivery/guards';
import type { JobPayloads } from '../../../core/src/queues';
import { backToDelayed } from './delay';

/**
 * Delivers one Message row (the row is the state; the job carries its id). Temporary SMTP failures throw, so BullMQ
 * retries with the backoff of JOB_OPTIONS.delivery; the last attempt marks the row failed. A `dispatch` job carries a
 * batch of rows instead: it delivers them together (deliverBatch). `guards` are the worker's pre-send guards
 * (productionGuards() in a real worker).
 */
export function deliveryProcessor(guards: PreSendGuards) {
  return (job: Job<JobPayloads['delivery']>, token?: string) => processDelivery(job, token, guards);
}

async function processDelivery(job: Job<JobPayloads['delivery']>, token: string | undefined, guards: PreSendGuards): Promise<DeliveryOutcome['kind'] | 'dispatched'> {
  if ('messages' in job.data) {
    await deliverBatch(db(), job.data.messages.map((m) => ({ id: m.id, notBefore: m.notBefore === null ? null : new Date(m.notBefore) })), guards);
    return 'dispatched';
  }
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const outcome = await deliverMessage(db(), job.data.messageId, { lastAttempt, guards });
  if ((outcome.kind === 'busy' || outcome.kind === 'early') && token) {
    // come back when the other worker's lease ends or send_at arrives, without spending an attempt
    return backToDelayed(job, token, outcome.until.getTime() + 100);
  }
  return outcome.kind;
}
