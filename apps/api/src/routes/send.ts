import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Router } from 'express';
import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../../../core/src/db';
import { AppError } from '../../../core/src/errors';
import { acceptSend, findSend, MAX_WAIT_SECONDS, type SendAnswer, type Sending } from '../../../core/src/sending/accept';
import { parseIdempotencyKey } from '../../../core/src/idempotency';
import { methodNotAllowed, setHeaders } from '../middleware/errors';
import { dailyQuota, rateLimitHeaders } from '../../../core/src/sending/quota';
import { cancelSend, rescheduleSend } from '../../../core/src/sending/cancel';
import { parseReschedule } from '../../../core/src/sending/schema';
import { acceptBatch, type BatchAnswer } from '../../../core/src/batches';
import { readSandboxCopy } from '../../../core/src/sandbox';

/** `Prefer: wait=N` (RFC 7240): how long the caller will wait for the copies to be delivered; 0 when not asked. */
function preferredWait(header: string | undefined): number {
  const match = header ? /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?/i.exec(header) : null;
  return match ? Number(match[1]) : 0;
}

/**
 * POST /send as a function of the key, the body and the request's headers: the answer's status and body, with its
 * headers (RateLimit-*, Location, Idempotent-Replayed, Preference-Applied) set on `res`. Every send answer carries the
 * key's RateLimit-* headers, refusals too. Express's route and the fast lane (lane.ts) both answer with it.
 */
export async function postSend(db: Db, sending: Sending, res: ServerResponse, key: ApiKey, body: unknown, headers: IncomingHttpHeaders): Promise<{ status: number; body: SendAnswer }> {
  const wait = preferredWait(headers.prefer as string | undefined);
  let result;
  try {
    result = await acceptSend(db, sending, key, body, { idempotencyKey: parseIdempotencyKey(headers['idempotency-key'] as string | undefined), waitSeconds: wait });
  } catch (err) {
    // a refusal carries the key's RateLimit-* headers too; they are read here, not before every accepted send
    if (err instanceof AppError) setHeaders(res, rateLimitHeaders(await dailyQuota(db, key)));
    throw err;
  }
  setHeaders(res, rateLimitHeaders(result.quota));
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  if (wait) res.setHeader('Preference-Applied', `wait=${Math.min(wait, MAX_WAIT_SECONDS)}`);
  res.setHeader('Location', `/api/v1/send/${result.body.id}`);
  return { status: result.status, body: result.body };
}

/** POST /send/batch: the results in order, with the key's RateLimit-* headers (refusals too) and Idempotent-Replayed. */
async function postBatch(db: Db, sending: Sending, res: ServerResponse, key: ApiKey, body: unknown, headers: IncomingHttpHeaders): Promise<BatchAnswer> {
  let result;
  try {
    result = await acceptBatch(db, sending, key, body, { idempotencyKey: parseIdempotencyKey(headers['idempotency-key'] as string | undefined) });
  } catch (err) {
    if (err instanceof AppError) setHeaders(res, rateLimitHeaders(await dailyQuota(db, key)));
    throw err;
  }
  setHeaders(res, rateLimitHeaders(result.quota));
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  return result.body;
}

/** docs/api.md: POST /send, POST /send/batch, GET /send/:id, PATCH /send/:id (reschedule), POST /send/:id/cancel. */
export function sendRoutes(router: Router, db: Db, sending: Sending): void {
  router
    .route('/send')
    .post(async (req, res) => {
      const answer = await postSend(db, sending, res, res.locals.key, req.body, req.headers);
      res.status(answer.status).json(answer.body);
    })
    .all(methodNotAllowed);

  router
    .route('/send/batch')
    .post(async (req, res) => {
      const answer = await postBatch(db, sending, res, res.locals.key, req.body, req.headers);
      res.json(answer);
    })
    .all(methodNotAllowed);

  router
    .route('/send/:id')
    .get(async (req, res) => {
      res.json(await findSend(db, res.locals.key.accountId, req.params.id));
    })
    .patch(async (req, res) => {
      const sendAt = parseReschedule(req.body);
      res.json({ ok: true, send: await rescheduleSend(db, res.locals.key.accountId, req.params.id, sendAt) });
    })
    .all(methodNotAllowed);

  router
    .route('/send/:id/raw')
    .get(async (req, res) => {
      const raw = await readSandboxCopy(db, res.locals.key.accountId, req.params.id);
      res.type('message/rfc822').send(raw);
    })
    .all(methodNotAllowed);

  router
    .route('/send/:id/cancel')
    .post(async (req, res) => {
      res.json({ ok: true, send: await cancelSend(db, res.locals.key.accountId, req.params.id) });
    })
    .all(methodNotAllowed);
}
