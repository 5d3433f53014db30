import { Router } from 'express';
import { campaignChanges, campaignInput } from '../../../../core/src/outreach/schema';
import type { Db, Tx } from '../../../../core/src/db';
import { changeCampaign, createCampaign, getCampaign, listCampaigns } from '../../../../core/src/outreach/campaigns';
import { campaignStats } from '../../../../core/src/outreach/stats';
import { browseProspects } from '../../../../core/src/operator/prospects';
import { accountQuery, idParam, validate } from '../../../../core/src/validate';
import { audit, campaignChange } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/campaigns (docs/api.md, docs/outreach.md): create, list an account's, read and change one, its numbers. */
export function campaignsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/campaigns')
    .post(async (req, res) => {
      const input = validate(campaignInput, req.body);
      res.status(201).json({ ok: true, campaign: await audit(req, res)(db, { action: 'create', resource: 'campaign', after: (c) => c, account: input.account }, (db) => createCampaign(db, input)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, campaigns: await listCampaigns(db, validate(accountQuery, req.query).account) });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns/:id')
    .get(async (req, res) => {
      res.json({ ok: true, campaign: await getCampaign(db, validate(idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(campaignChanges, req.body);
      // a running campaign's due steps are queued once the change and its entry are committed (core/after-commit.ts)
      res.json({ ok: true, campaign: await audit(req, res)(db, campaignChange(id), (db) => changeCampaign(db, id, changes)) });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns/:id/stats')
    .get(async (req, res) => {
      res.json({ ok: true, stats: await campaignStats(db, validate(idParam, req.params.id)) });
    })
    .all(methodNotAllowed);

  // a campaign's prospects, newest first, by status and step, in keyset pages (the console's campaign page)
  router
    .route('/campaigns/:id/prospects')
    .get(async (req, res) => {
      const page = await browseProspects(db, validate(idParam, req.params.id), req.query);
      res.json({ ok: true, prospects: page.rows, next: page.next });
    })
    .all(methodNotAllowed);
  return router;
}
