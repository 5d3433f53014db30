import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { deliveryStatus } from '../../../../core/src/delivery/status';
import { methodNotAllowed } from '../../middleware/errors';

/** GET /admin/api/delivery/status: Postgres's counts by status and the oldest queued age (delivery/status.ts). */
export function deliveryStatusRouter(db: Db): Router {
  const router = Router();
  router
    .route('/delivery/status')
    .get(async (_req, res) => {
      res.json({ ok: true, ...(await deliveryStatus(db)) });
    })
    .all(methodNotAllowed);
  return router;
}
