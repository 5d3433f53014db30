import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { pingDatabase } from '../../../core/src/health/repository';
import { redis } from '../../../core/src/redis';
import { methodNotAllowed } from '../middleware/errors';

const within = <T>(ms: number, work: Promise<T>) =>
  Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);

export function healthRouter(db: Db): Router {
  const router = Router();
  router
    .route('/healthz')
    .get((_req, res) => {
      res.json({ ok: true });
    })
    .all(methodNotAllowed);
  router
    .route('/readyz')
    .get(async (_req, res) => {
      const [postgres, redisUp] = await Promise.all([
        within(2000, pingDatabase(db)).then(() => true, () => false),
        within(2000, redis().ping()).then(() => true, () => false),
      ]);
      const ok = postgres && redisUp;
      res.status(ok ? 200 : 503).json(ok ? { ok, postgres, redis: redisUp } : { ok, error: 'not ready', postgres, redis: redisUp });
    })
    .all(methodNotAllowed);
  return router;
}
