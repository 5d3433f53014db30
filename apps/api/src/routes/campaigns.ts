import type { Router } from 'express';
import { listCampaignsOf } from '../../../core/src/outreach/operations';
import type { Db } from '../../../core/src/db';
import { methodNotAllowed } from '../middleware/errors';

/** docs/api.md: the key's account's campaigns (the prospects permission is checked in v1.ts, then again by the operation). */
export function campaignsRoutes(router: Router, db: Db): void {
  router
    .route('/campaigns')
    .get(async (_req, res) => {
      res.json(await listCampaignsOf(db, res.locals.key));
    })
    .all(methodNotAllowed);
}
