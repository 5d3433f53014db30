import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { listCampaigns } from '../../../core/src/services/campaigns';
import { methodNotAllowed } from '../middleware/errors';

/** Spec 4.5: the key's account's campaigns (the prospects permission is checked in v1.ts). */
export function campaignsRoutes(router: Router, db: Db): void {
  router
    .route('/campaigns')
    .get(async (_req, res) => {
      res.json({ ok: true, campaigns: await listCampaigns(db, res.locals.key.accountId) });
    })
    .all(methodNotAllowed);
}
