import type { Job } from 'bullmq';
import type { Db } from '../../../core/src/db';
import { logger } from '../../../core/src/logger';
import type { JobPayloads } from '../../../core/src/queues';
import { deliverWebhook, type EventFills, type WebhookOutcome } from '../../../core/src/webhooks/deliver';

export const webhookProcessor = (db: Db, fills: EventFills) => (job: Job<JobPayloads['webhook']>) => processWebhook(db, job, fills);

/**
 * POSTs one event to one webhook endpoint. A failed attempt throws, so BullMQ retries it after
 * WEBHOOK_RETRY_BASE_MS x 4^n (JOB_OPTIONS.webhook); the event id, and so `webhook-id`, is the same on every try.
 */
export async function processWebhook(db: Db, job: Job<JobPayloads['webhook']>, fills: EventFills): Promise<WebhookOutcome['kind']> {
  const outcome = await deliverWebhook(db, job.data.eventId, job.data.webhookId, (job.data.attemptsBefore ?? 0) + job.attemptsMade + 1, fills);
  if (outcome.kind === 'disabled') logger.warn({ webhook: job.data.webhookId, err: outcome.error }, 'webhook disabled after 3 days without a success');
  return outcome.kind;
}
