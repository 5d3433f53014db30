import { Router } from 'express';
import { readStats } from '../../../../core/src/analytics/stats';
import type { Db } from '../../../../core/src/db';
import { heldToNamed } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** GET /admin/api/stats (docs/analytics.md): the daily counters of a range, for an account, mailbox, campaign or broadcast. */
export function statsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/stats')
    .get(async (req, res) => {
      await heldToNamed(db, req, res, { mailbox: 'mailboxes', campaign: 'campaigns', broadcast: 'broadcasts' });
      const { from, to, days } = await readStats(db, req.query);
      res.json({ ok: true, from, to, days });
    })
    .all(methodNotAllowed);
  return router;
}
