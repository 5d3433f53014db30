import { FinishedWaits } from './finished';
import { newId } from '../ids';
import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { DeliveryQueue } from '../delivery/outbox';
import { isFinalStatus } from '../delivery/status';
import { markNotEnqueued } from '../delivery/repository';
import { NotFound, Unprocessable } from '../errors';
import { logger } from '../logger';
import { finishIdempotent, releaseIdempotent, requestFingerprint, startIdempotent } from '../idempotency';
import { MailboxCache } from './mailbox';
import { dailyQuota, refuseOverLimit, secondsToNextUtcMidnight, type DailyQuota } from './quota';
import { SendWriter, type SkipReason } from './write';
import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import { parseSendRequest } from './schema';
import { iso } from '../validate';

export interface SendAnswer {
  ok: true;
  id: string;
  status: string;
  messages: { id: string; to: string; status: string; bounce?: PublicBounce; message_id?: string }[];
  skipped: { to: string; reason: SkipReason }[];
  /** GET only: when the send goes out (null: as soon as it can) */
  send_at?: string | null;
}

export interface AcceptedSend {
  status: 200 | 202;
  body: SendAnswer;
  quota: DailyQuota;
  /** the answer of an earlier request with the same Idempotency-Key */
  replayed: boolean;
}

/**
 * What accepting sends keeps in an API process: the writer its accepted sends share (one statement and commit for
 * those that arrive together), the queueing of their deliveries (one Redis call for those too), the key's mailboxes, briefly, and the waiters of `Prefer: wait`. The API's createApp
 * makes one over its database and passes it to the routes, the fast lane and the MCP tools; `finished.stop()` closes
 * the waiters' connection.
 */
export interface Sending {
  writer: SendWriter;
  deliveries: DeliveryQueue;
  mailboxes: MailboxCache;
  finished: FinishedWaits;
}

export function createSending(db: Db): Sending {
  return { writer: new SendWriter(db), deliveries: new DeliveryQueue(), mailboxes: new MailboxCache(), finished: new FinishedWaits() };
}

/** The idempotency scope of sends (records written before route scoping have it as their default). */
export const SEND_ROUTE = 'POST /send';

/** The longest `Prefer: wait` honoured; a larger N waits this long. */
export const MAX_WAIT_SECONDS = 30;

/**
 * The send's own status from its copies: queued until any copy was tried, sending while some are unfinished; once all
 * are finished: sent when at least one was delivered, bounced when all bounced, cancelled when all were cancelled
 * (withdrawn: cancel.ts), failed otherwise.
 */
export function sendStatus(statuses: string[]): string {
  if (statuses.every((s) => s === 'queued')) return 'queued';
  if (!statuses.every((s) => isFinalStatus(s))) return 'sending';
  if (statuses.some((s) => s === 'sent')) return 'sent';
  if (statuses.every((s) => s === 'cancelled')) return 'cancelled';
  return statuses.every((s) => s === 'bounced') ? 'bounced' : 'failed';
}

/**
 * POST /api/v1/send: validates, then in one transaction drops suppressed and stop-listed recipients, counts the copies
 * against the key's daily limit (all or nothing), writes the Send and one Message per recipient and, with an
 * Idempotency-Key, the answer to replay. After commit it queues delivery; if Redis cannot take the jobs the rows stay
 * un-queued and the reconciler queues them, so the answer is still 202.
 */
export async function acceptSend(
  db: Db,
  sending: Sending,
  key: ApiKey,
  body: unknown,
  options: { idempotencyKey: string | null; waitSeconds: number },
): Promise<AcceptedSend> {
  const mailbox = await sending.mailboxes.sendingMailbox(db, key.mailboxId);
  const request = parseSendRequest(body, mailbox.address);
  const idempotent = options.idempotencyKey ? await startIdempotent(db, { apiKeyId: key.id, route: SEND_ROUTE, key: options.idempotencyKey }, requestFingerprint(body)) : null;
  if (idempotent?.kind === 'replay') {
    return { status: idempotent.status as 200 | 202, body: idempotent.body as SendAnswer, quota: await dailyQuota(db, key), replayed: true };
  }
  const recordId = idempotent?.recordId;
  let accepted: { answer: SendAnswer; quota: DailyQuota; rows: { id: string; notBefore?: Date | null }[] };
  try {
    const sendId = newId();
    const written = await sending.writer.write({ key, mailbox, request: { ...request, fromName: request.fromName ?? mailbox.name }, sendId, idempotencyRecord: recordId });
    if (!written.kept.length) throw new Unprocessable('nobody to write to: every recipient is suppressed or on the stop list');
    if (written.used === null) await refuseOverLimit(db, key, written.kept.length);
    accepted = {
      answer: { ok: true, id: sendId, status: 'queued', messages: written.kept.map((m) => ({ ...m, status: 'queued' })), skipped: written.skipped },
      quota: { limit: key.dailyLimit, used: written.used!, resetSeconds: secondsToNextUtcMidnight() },
      rows: written.kept.map((m) => ({ id: m.id, notBefore: request.sendAt })),
    };
  } catch (err) {
    if (recordId !== undefined) await releaseIdempotent(db, recordId);
    throw err;
  }

  try {
    await sending.deliveries.add(accepted.rows);
  } catch (err) {
    // Redis did not take the jobs: the outage's one line is DeliveryQueue's (outage.ts), not one a send
    logger.debug({ send: accepted.answer.id, err: (err as Error).message }, 'could not queue delivery now; the reconciler will');
    await markNotEnqueued(db, accepted.rows.map((r) => r.id)).catch(() => undefined);
  }

  const waitSeconds = Math.min(options.waitSeconds, MAX_WAIT_SECONDS);
  if (waitSeconds > 0 && !accepted.rows.some((r) => r.notBefore)) {
    const finished = await sending.finished.waitFor(db, accepted.rows.map((r) => r.id), waitSeconds);
    if (finished) {
      const messages = accepted.answer.messages.map((m) => ({ ...m, status: finished.get(m.id) ?? m.status }));
      const answer: SendAnswer = { ...accepted.answer, status: sendStatus(messages.map((m) => m.status)), messages };
      if (recordId !== undefined) await finishIdempotent(db, recordId, 200, answer);
      return { status: 200, body: answer, quota: accepted.quota, replayed: false };
    }
  }
  return { status: 202, body: accepted.answer, quota: accepted.quota, replayed: false };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** GET /api/v1/send/:id: the same shape as the POST answer with current statuses, for the key's own account only. */
export async function findSend(db: Tx, accountId: number, id: string): Promise<SendAnswer> {
  const send = UUID.test(id)
    ? await db.send.findFirst({
        where: { id, accountId },
        include: { messages: { select: { id: true, to: true, status: true, bounce: true, messageIdHeader: true }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] } },
      })
    : null;
  if (!send) throw new NotFound(`no send with id ${id}`);
  const messages = send.messages.map((m) => {
    const bounce = publicBounce(m.bounce as unknown as Bounce | null);
    // the Message-ID header is fixed when the copy is written (delivery/outbox.ts), so it is known before it goes out
    return { id: m.id, to: m.to, status: m.status as string, message_id: m.messageIdHeader, ...(bounce ? { bounce } : {}) };
  });
  return {
    ok: true,
    id: send.id,
    status: sendStatus(messages.map((m) => m.status)),
    messages,
    skipped: send.skipped as SendAnswer['skipped'],
    send_at: iso(send.sendAt),
  };
}
