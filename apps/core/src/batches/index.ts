import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { config } from '../config';
import { fromRefusal } from '../domains/sending';
import { AppError, BadRequest, Conflict, Forbidden } from '../errors';
import { newId } from '../ids';
import { finishIdempotent, releaseIdempotent, requestFingerprint, startIdempotent, startIdempotentAll, type IdempotencyScope } from '../idempotency';
import { logger } from '../logger';
import { markNotEnqueued } from '../delivery/repository';
import { refuseForeignReplyTo, rendered, SEND_ROUTE, type SendAnswer, type Sending } from '../sending/accept';
import { dailyQuota, refuseOverLimit, secondsToNextUtcMidnight, type DailyQuota } from '../sending/quota';
import { parseSendRequest, type SendRequest } from '../sending/schema';
import { writeBatch, type AcceptedWrite, type SendToWrite } from '../sending/write';
import type { TemplateStamp } from '../templates/cache';
import { validate } from '../validate';
import { batchSchema } from './schema';

/** The idempotency scope of a whole batch (its Idempotency-Key header). */
export const BATCH_ROUTE = 'POST /send/batch';
/** The scope of each message of a batch sent with an Idempotency-Key and without a key of its own: `<batch key> <index>`. */
const BATCH_MESSAGE_ROUTE = 'POST /send/batch message';

/** One message's result, in the batch's order: its send as POST /send answers it, or why it was refused. */
export type BatchResult = { ok: true; id: string; status: string; messages: SendAnswer['messages']; skipped: SendAnswer['skipped'] } | { ok: false; error: string };

export interface BatchAnswer {
  ok: true;
  results: BatchResult[];
}

export interface AcceptedBatch {
  body: BatchAnswer;
  quota: DailyQuota;
  replayed: boolean;
}

/** A message that passed its checks, waiting for its write. */
interface Ready {
  index: number;
  parsed: SendRequest;
  request: SendRequest;
  stamp?: TemplateStamp;
  sendId: string;
  recordId?: number;
}

const refused = (err: unknown): BatchResult => {
  if (!(err instanceof AppError)) throw err;
  return { ok: false, error: err.message };
};

const resultOf = (answer: SendAnswer): BatchResult => ({ ok: true, id: answer.id, status: answer.status, messages: answer.messages, skipped: answer.skipped });

/**
 * POST /api/v1/send/batch: up to 100 send bodies, each checked alone (a bad one is named in its result and the others
 * go), then every valid one written in ONE statement (sending/write.ts writeBatch): the key's daily limit counts the
 * whole batch once, all or nothing (429 and nothing written), and each send commits with its idempotency answer. The
 * batch's Idempotency-Key replays the whole answer; each message of such a batch has a key of its own too (its
 * `idempotency_key`, scoped as POST /send's, or `<batch key> <index>`), so a batch whose process died between the write
 * and the batch's answer is, when retried, answered from its messages' records and sends nothing twice.
 */
export async function acceptBatch(db: Db, sending: Sending, key: ApiKey, body: unknown, options: { idempotencyKey: string | null }): Promise<AcceptedBatch> {
  const { messages } = validate<{ messages: unknown[] }>(batchSchema, body);
  const mailbox = await sending.mailboxes.sendingMailbox(db, key.mailboxId);
  if (config().requireVerifiedDomain) {
    const refusal = fromRefusal({ mailboxAddress: mailbox.address, domains: await sending.domains.of(db, key.accountId), requireVerified: true, domainAddresses: false }, mailbox.address);
    if (refusal) throw new Forbidden(`from: ${refusal}`);
  }
  const batchScope = options.idempotencyKey ? { apiKeyId: key.id, route: BATCH_ROUTE, key: options.idempotencyKey } : null;
  const batch = batchScope ? await startIdempotent(db, batchScope, requestFingerprint(body)) : null;
  if (batch?.kind === 'replay') return { body: batch.body as BatchAnswer, quota: await dailyQuota(db, key), replayed: true };

  const results: (BatchResult | null)[] = messages.map(() => null);
  const records: number[] = [];
  try {
    // each message checked alone: its refusal is its result
    const checked = await Promise.all(
      messages.map(async (message, index) => {
        try {
          if (!message || typeof message !== 'object' || Array.isArray(message)) throw new BadRequest('each message must be a JSON object');
          const { idempotency_key: ownKey, ...fields } = message as Record<string, unknown>;
          if (ownKey !== undefined && (typeof ownKey !== 'string' || !/^[\x20-\x7e]{1,200}$/.test(ownKey))) {
            throw new BadRequest('idempotency_key must be 1 to 200 printable ASCII characters');
          }
          const parsed = parseSendRequest(fields, mailbox.address);
          await refuseForeignReplyTo(db, sending, key.accountId, parsed);
          const { request, stamp } = await rendered(db, sending, key.accountId, parsed);
          const scope: IdempotencyScope | null = ownKey
            ? { apiKeyId: key.id, route: SEND_ROUTE, key: ownKey as string }
            : batchScope
              ? { apiKeyId: key.id, route: BATCH_MESSAGE_ROUTE, key: `${batchScope.key} ${index}` }
              : null;
          return { index, parsed, request, stamp, scope, fingerprint: scope ? requestFingerprint(fields) : '' };
        } catch (err) {
          results[index] = refused(err);
          return null;
        }
      }),
    );
    const valid = checked.filter((c) => c !== null);
    // the messages' own keys, taken together: an earlier answer is replayed, a key in use or reused is that message's refusal
    const keyed = valid.filter((c) => c.scope);
    const starts = await startIdempotentAll(db, keyed.map((c) => ({ scope: c.scope!, fingerprint: c.fingerprint })));
    const ready: Ready[] = [];
    for (const c of valid) {
      const start = c.scope ? starts[keyed.indexOf(c)]! : null;
      if (start instanceof AppError) results[c.index] = refused(start);
      else if (start?.kind === 'replay') results[c.index] = resultOf(start.body as SendAnswer);
      else {
        if (start) records.push(start.recordId);
        ready.push({ index: c.index, parsed: c.parsed, request: c.request, stamp: c.stamp, sendId: newId(), recordId: start?.recordId });
      }
    }
    const quota = await writeReady(db, sending, key, mailbox, ready, results);
    const answer: BatchAnswer = { ok: true, results: results.map((r) => r ?? { ok: false, error: 'not written' }) };
    if (batch?.kind === 'new') await finishIdempotent(db, batch.recordId, 200, answer);
    return { body: answer, quota, replayed: false };
  } catch (err) {
    // a refusal of the whole batch (its limit) or a fault: every key it took is free again (what was written keeps its own)
    if (batch?.kind === 'new') await releaseIdempotent(db, batch.recordId);
    await Promise.all(records.map((id) => releaseIdempotent(db, id)));
    throw err;
  }
}

/** How many times the batch writes again the messages whose template changed before their write. */
const RENDER_ATTEMPTS = 3;

/**
 * Writes the batch's valid messages in one statement (429 and nothing written when the key's limit would be passed),
 * then writes again alone those whose template changed meanwhile, rendered anew. Fills each one's result and queues
 * the deliveries of all of them at once.
 */
async function writeReady(db: Db, sending: Sending, key: ApiKey, mailbox: { id: number; address: string; name: string }, ready: Ready[], results: (BatchResult | null)[]): Promise<DailyQuota> {
  const toWrite = (m: Ready): SendToWrite => ({ key, mailbox, request: { ...m.request, fromName: m.request.fromName ?? mailbox.name }, sendId: m.sendId, idempotencyRecord: m.recordId, templates: m.stamp });
  let used: number | null = null;
  let pending = ready;
  const queued: { id: string; notBefore: Date | null }[] = [];
  for (let attempt = 0; pending.length; attempt++) {
    // a test key's messages go to the sandbox, each in its own write: they count against no limit
    const written: AcceptedWrite[] = key.mode === 'test' ? await Promise.all(pending.map((m) => sending.sandbox.write(toWrite(m)))) : await writeBatch(db, pending.map(toWrite));
    const wanted = written.filter((w) => w.kept.length && !w.stale).reduce((n, w) => n + w.kept.length, 0);
    if (written.some((w) => w.used === null && w.kept.length && !w.stale)) {
      // over the limit: nothing of this statement was written; the first statement's refusal is the batch's 429
      if (attempt === 0) await refuseOverLimit(db, key, wanted);
    }
    const stale: Ready[] = [];
    written.forEach((w, i) => {
      const m = pending[i]!;
      if (w.stale) return void stale.push(m);
      if (!w.kept.length) return void (results[m.index] = { ok: false, error: 'nobody to write to: every recipient is suppressed or on the stop list' });
      if (w.used === null) return void (results[m.index] = refused(new Conflict("the key's daily limit was reached while this message's template was rendered again")));
      used = w.used;
      results[m.index] = { ok: true, id: m.sendId, status: 'queued', messages: w.kept.map((k) => ({ ...k, status: 'queued' })), skipped: w.skipped };
      queued.push(...w.kept.map((k) => ({ id: k.id, notBefore: m.request.sendAt })));
    });
    // a message written or refused keeps its idempotency record as the statement left it; the others free theirs below
    for (const m of pending) if (m.recordId !== undefined && results[m.index]?.ok === false) await releaseIdempotent(db, m.recordId);
    if (stale.length && attempt + 1 >= RENDER_ATTEMPTS) {
      for (const m of stale) {
        results[m.index] = refused(new Conflict('the template changed while this message was written: send it again'));
        if (m.recordId !== undefined) await releaseIdempotent(db, m.recordId);
      }
      break;
    }
    for (const m of stale) {
      sending.templates.forget(key.accountId, m.parsed.template!.ref);
      Object.assign(m, await rendered(db, sending, key.accountId, m.parsed));
    }
    pending = stale;
  }
  if (queued.length) {
    sending.deliveries.addInBackground(queued, async (err) => {
      logger.debug({ messages: queued.length, err: err.message }, 'could not queue a batch now; the reconciler will');
      await markNotEnqueued(db, queued.map((q) => q.id)).catch(() => undefined);
    });
  }
  return used === null ? await dailyQuota(db, key) : { limit: key.dailyLimit, used, resetSeconds: secondsToNextUtcMidnight() };
}
