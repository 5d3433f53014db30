import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { AppError } from '../../../core/src/errors';
import { acceptSend, findSend, MAX_WAIT_SECONDS } from '../../../core/src/sending/accept';
import { parseIdempotencyKey } from '../../../core/src/idempotency';
import { dailyQuota, rateLimitHeaders } from '../../../core/src/sending/quota';

/** `Prefer: wait=N` (RFC 7240): how long the caller will wait for the copies to be delivered; 0 when not asked. */
function preferredWait(header: string | undefined): number {
  const match = header ? /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?/i.exec(header) : null;
  return match ? Number(match[1]) : 0;
}

/** Spec 4.1 and DESIGN section 4: POST /send, GET /send/:id. Every send answer carries the key's RateLimit-* headers. */
export function sendRoutes(router: Router, db: Db): void {
  router.post('/send', async (req, res) => {
    const key = res.locals.key;
    const wait = preferredWait(req.get('prefer'));
    let result;
    try {
      result = await acceptSend(db, key, req.body, { idempotencyKey: parseIdempotencyKey(req.get('idempotency-key')), waitSeconds: wait });
    } catch (err) {
      // a refusal carries the key's RateLimit-* headers too; they are read here, not before every accepted send
      if (err instanceof AppError) res.set(rateLimitHeaders(await dailyQuota(db, key)));
      throw err;
    }
    res.set(rateLimitHeaders(result.quota));
    if (result.replayed) res.set('Idempotent-Replayed', 'true');
    if (wait) res.set('Preference-Applied', `wait=${Math.min(wait, MAX_WAIT_SECONDS)}`);
    res.set('Location', `/api/v1/send/${result.body.id}`);
    res.status(result.status).json(result.body);
  });

  router.get('/send/:id', async (req, res) => {
    res.json(await findSend(db, res.locals.key.accountId, req.params.id));
  });
}
