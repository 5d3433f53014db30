import type { Request, RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import { finishIdempotent, parseIdempotencyKey, releaseIdempotent, requestFingerprint, startIdempotent } from '../../../core/src/idempotency';
import { logger } from '../../../core/src/logger';

/**
 * Idempotency-Key for a write route other than /send (docs/idempotency.md), with the rules of core/idempotency: the key is
 * taken before the route runs; a 2xx answer is stored (and replayed with `Idempotent-Replayed: true`), any other
 * answer frees the key. The answer is stored before it is written out, so a retry arriving after it sees the replay.
 * `request` is what the fingerprint covers: the body by default.
 */
export function idempotent(db: Db, route: string, request: (req: Request) => unknown = (req) => req.body): RequestHandler {
  return async (req, res, next) => {
    const key = parseIdempotencyKey(req.get('idempotency-key'));
    if (key === null) return next();
    const start = await startIdempotent(db, { apiKeyId: res.locals.key.id, route, key }, requestFingerprint(request(req)));
    if (start.kind === 'replay') {
      res.set('Idempotent-Replayed', 'true').status(start.status).json(start.body);
      return;
    }
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const accepted = res.statusCode >= 200 && res.statusCode < 300;
      const record = accepted ? finishIdempotent(db, start.recordId, res.statusCode, body) : releaseIdempotent(db, start.recordId);
      record.then(
        () => json(body),
        (err: Error) => {
          // the write itself is done: answer it; the record stays `processing` and is taken over after 60 s
          logger.warn({ err: err.message, route }, 'could not store the idempotent answer');
          json(body);
        },
      );
      return res;
    };
    next();
  };
}
