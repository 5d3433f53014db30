import http from 'node:http';
import https from 'node:https';
import { Webhook as Signer } from 'standardwebhooks';
import { config } from '../config';
import { guardedLookup, refuseLiteralAddress, RefusedAddress, type OutboundPolicy } from '../outbound/guard';
import type { Db } from '../db';
import { metrics } from '../metrics';
import { JOB_OPTIONS, webhookRetryDelayMs } from '../queues';
import { markWebhookFailing } from './repository';
import { signingSecrets } from './service';

/** Attempts of one delivery in all (the first and its retries), counted across rebuilt jobs. */
export const WEBHOOK_ATTEMPTS = JOB_OPTIONS.webhook.attempts ?? 8;

/** A receiver has this long to answer 2xx. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** An endpoint without a success for this long (and failing still) is disabled. */
export const DISABLE_AFTER_MS = 3 * 24 * 3600_000;

export type WebhookOutcome =
  | { kind: 'delivered'; status: number }
  /** nothing to send: the endpoint was deleted or disabled, or the event is gone */
  | { kind: 'dropped'; why: string }
  /** failed, and this failure disabled the endpoint: no retry */
  | { kind: 'disabled'; error: string };

/**
 * Builds the data of an event written short, before it is posted (the MX's `inbound.received`: mx/store.ts
 * builtReceived), by event type; handed in by the worker (webhooks know no domain). It keeps what it built in the
 * event, so a retry posts the same body, and answers the data to post, or null when it can no longer be made.
 */
export type EventFills = Partial<Record<string, (db: Db, event: { id: string; data: unknown }) => Promise<unknown>>>;

/** A failed attempt: the job throws it so BullMQ retries (same event id, fresh timestamp and signature). */
export class WebhookAttemptError extends Error {
  override name = 'WebhookAttemptError';
}

/** The body of every delivery: `{type, timestamp, data}` (timestamp: when the event happened, ISO UTC). */
export function webhookBody(event: { type: string; createdAt: Date; data: unknown }): string {
  return JSON.stringify({ type: event.type, timestamp: event.createdAt.toISOString(), data: event.data });
}

/** Standard Webhooks headers: one `v1,<sig>` per live secret, space-separated. */
export function signedHeaders(eventId: string, body: string, secrets: string[], now = new Date()): Record<string, string> {
  const signature = secrets.map((secret) => new Signer(secret).sign(eventId, now, body)).join(' ');
  return {
    'content-type': 'application/json',
    'user-agent': 'mailservice-webhooks/1',
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

/**
 * One POST through the outbound guard (outbound/guard.ts): only public addresses unless WEBHOOK_ALLOW_PRIVATE, checked
 * at connect time; no redirect followed. The recorded error names what happened for the operator (the endpoint is
 * theirs), but a refused address is told as such, never fetched.
 */
function post(url: string, body: string, headers: Record<string, string>, policy: OutboundPolicy): Promise<{ status: number | null; error: string | null }> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
      refuseLiteralAddress(target.hostname, policy);
    } catch (err) {
      return resolve({ status: null, error: err instanceof RefusedAddress ? `refused: ${err.message}` : 'not a valid URL' });
    }
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      lookup: guardedLookup(policy) as unknown as typeof import('node:dns').lookup,
    });
    req.on('response', (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      resolve({ status, error: status >= 200 && status < 300 ? null : `HTTP ${status}` });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const why = err instanceof RefusedAddress ? `refused: ${err.message}` : err.name === 'AbortError' || err.name === 'TimeoutError' ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : (err.code ?? err.message);
      resolve({ status: null, error: why });
    });
    req.end(body);
  });
}

/**
 * One attempt to deliver one event to one endpoint (the job's payload is ids; both rows are reloaded). Every attempt is
 * recorded (only while its `webhook_jobs` row says it is owed); a 2xx clears the endpoint's failure record, anything else starts or extends it and throws, and a failure
 * three days after the first one since the last success disables the endpoint instead.
 */
export async function deliverWebhook(db: Db, eventId: string, webhookId: number, attempt: number, fills: EventFills = {}): Promise<WebhookOutcome> {
  const [webhook, event, owed] = await Promise.all([
    db.webhook.findUnique({ where: { id: webhookId } }),
    db.event.findUnique({ where: { id: eventId } }),
    db.webhookJob.findUnique({ where: { eventId_webhookId: { eventId, webhookId } }, select: { attempts: true } }),
  ]);
  // the row goes with the outcome: a job that finds none repeats one whose outcome is recorded (a job its worker died
  // after finishing, or added again after it ran)
  if (!owed) return { kind: 'dropped', why: 'the delivery has its outcome already' };
  // the delivery's row (webhook_jobs) goes with every outcome but a failure with attempts left, which moves it on
  const done = () => db.webhookJob.deleteMany({ where: { eventId, webhookId } });
  if (!webhook || !webhook.enabled || !event) {
    await done();
    return { kind: 'dropped', why: !webhook ? 'the webhook was deleted' : !webhook.enabled ? 'the webhook is disabled' : 'the event is gone' };
  }
  const fill = fills[event.type];
  const data = fill ? await fill(db, event) : event.data;
  if (data === null) {
    await done();
    return { kind: 'dropped', why: 'the event can no longer be built' };
  }
  const body = webhookBody({ ...event, data });
  const stopTimer = metrics.webhookSeconds.startTimer();
  const { status, error } = await post(webhook.url, body, signedHeaders(event.id, body, signingSecrets(webhook)), { allowPrivate: config().webhookAllowPrivate });
  stopTimer();
  await db.webhookDelivery.create({ data: { webhookId, eventId, type: event.type, attempt, statusCode: status, error } });
  if (!error) {
    await db.webhook.update({ where: { id: webhookId }, data: { failingSince: null, lastSuccessAt: new Date() } });
    await done();
    metrics.webhookDeliveries.inc({ result: 'delivered' });
    return { kind: 'delivered', status: status! };
  }
  const enabled = await markWebhookFailing(db, webhookId, DISABLE_AFTER_MS);
  if (enabled === false) {
    await done();
    metrics.webhookDeliveries.inc({ result: 'dead' });
    return { kind: 'disabled', error };
  }
  if (attempt >= WEBHOOK_ATTEMPTS) await done();
  else await db.webhookJob.updateMany({ where: { eventId, webhookId }, data: { attempts: attempt, dueAt: new Date(Date.now() + webhookRetryDelayMs(attempt)) } });
  metrics.webhookDeliveries.inc({ result: 'failed' });
  throw new WebhookAttemptError(`webhook ${webhookId} refused event ${eventId}: ${error}`);
}
