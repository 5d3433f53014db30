import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { pingDatabase } from '../../../core/src/health/repository';
import { within } from '../../../core/src/deadline';
import { dependencies, OUTAGE_RETRY_AFTER_SECONDS } from '../../../core/src/outage';
import { redis } from '../../../core/src/redis';
import { methodNotAllowed } from '../middleware/errors';

/** How long the readiness probe waits for each dependency: a hung Redis or Postgres answers "not ready" in time. */
const READY_WITHIN_MS = 800;

/**
 * Whether a dependency answers in time. A probe every second during an outage is not a line each: the dependency watch
 * writes the outage's one warn line and, when the probe finds it back, its info line.
 */
function answers(dependency: 'postgres' | 'redis', work: Promise<unknown>): Promise<boolean> {
  return within(work, READY_WITHIN_MS, `${dependency} did not answer`).then(
    () => (dependencies.up(dependency), true),
    (err: unknown) => (dependencies.down(dependency, err), false),
  );
}

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
      const [postgres, redisUp] = await Promise.all([answers('postgres', pingDatabase(db)), answers('redis', redis().ping())]);
      const ok = postgres && redisUp;
      if (!ok) res.setHeader('Retry-After', String(OUTAGE_RETRY_AFTER_SECONDS));
      res.status(ok ? 200 : 503).json(ok ? { ok, postgres, redis: redisUp } : { ok, error: 'not ready', postgres, redis: redisUp });
    })
    .all(methodNotAllowed);
  return router;
}
