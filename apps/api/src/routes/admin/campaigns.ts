import { Router } from 'express';
import * as schemas from '../../../../core/src/admin-schemas';
import type { Db } from '../../../../core/src/db';
import { changeCampaign, createCampaign, getCampaign, listCampaigns } from '../../../../core/src/outreach/campaigns';
import { campaignStats } from '../../../../core/src/outreach/stats';
import { browseProspects } from '../../../../core/src/operator/prospects';
import { validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/campaigns (docs/api.md, docs/outreach.md): create, list an account's, read and change one, its numbers. */
export function campaignsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/campaigns')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, campaign: await createCampaign(db, validate(schemas.campaignInput, req.body)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, campaigns: await listCampaigns(db, validate(schemas.accountQuery, req.query).account) });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns/:id')
    .get(async (req, res) => {
      res.json({ ok: true, campaign: await getCampaign(db, validate(schemas.idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(schemas.idParam, req.params.id);
      res.json({ ok: true, campaign: await changeCampaign(db, id, validate(schemas.campaignChanges, req.body)) });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns/:id/stats')
    .get(async (req, res) => {
      res.json({ ok: true, stats: await campaignStats(db, validate(schemas.idParam, req.params.id)) });
    })
    .all(methodNotAllowed);

  // a campaign's prospects, newest first, by status and step, in keyset pages (the console's campaign page)
  router
    .route('/campaigns/:id/prospects')
    .get(async (req, res) => {
      const page = await browseProspects(db, validate(schemas.idParam, req.params.id), req.query);
      res.json({ ok: true, prospects: page.rows, next: page.next });
    })
    .all(methodNotAllowed);
  return router;
}
