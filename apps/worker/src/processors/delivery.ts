import type { Job } from 'bullmq';
import { deliverMessage, type Delivery, type DeliveryOutcome } from '../../../core/src/delivery/deliver';
import { deliverBatch } from '../../../core/src/delivery/dispatch';
import type { JobPayloads } from '../../../core/src/queues';
import { backToDelayed } from './delay';

/**
 * Delivers one Message row (the row is the state; the job carries its id). Temporary SMTP failures throw, so BullMQ
 * retries with the backoff of JOB_OPTIONS.delivery; the last attempt marks the row failed. A `dispatch` job carries a
 * batch of rows instead: it delivers them together (deliverBatch). `delivery` is the worker process's (createDelivery in
 * main.ts: its database, kinds of email, shared claims and SMTP pools).
 */
export function deliveryProcessor(delivery: Delivery) {
  return (job: Job<JobPayloads['delivery']>, token?: string) => processDelivery(job, token, delivery);
}

async function processDelivery(job: Job<JobPayloads['delivery']>, token: string | undefined, delivery: Delivery): Promise<DeliveryOutcome['kind'] | 'dispatched'> {
  if ('messages' in job.data) {
    await deliverBatch(delivery, job.data.messages.map((m) => ({ id: m.id, notBefore: m.notBefore === null ? null : new Date(m.notBefore) })));
    return 'dispatched';
  }
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const outcome = await deliverMessage(delivery, job.data.messageId, { lastAttempt });
  if ((outcome.kind === 'busy' || outcome.kind === 'early') && token) {
    // come back when the other worker's lease ends or send_at arrives, without spending an attempt
    return backToDelayed(job, token, outcome.until.getTime() + 100);
  }
  return outcome.kind;
}
