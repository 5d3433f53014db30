import { Router } from 'express';
import * as schemas from '../../../core/src/admin-schemas';
import type { Db } from '../../../core/src/db';
import { getCampaign, listCampaigns } from '../../../core/src/services/campaigns';
import { getList, listLists } from '../../../core/src/services/lists';
import { validate } from '../../../core/src/validate';

/** The operator's reads that had no route: campaigns and lists, all of an account or one by id. Other methods fall through. */
export function controlRouter(db: Db): Router {
  const router = Router();
  router.get('/campaigns', async (req, res) => {
    res.json({ ok: true, campaigns: await listCampaigns(db, validate(schemas.accountQuery, req.query).account) });
  });
  router.get('/campaigns/:id', async (req, res) => {
    res.json({ ok: true, campaign: await getCampaign(db, validate(schemas.idParam, req.params.id)) });
  });
  router.get('/lists', async (req, res) => {
    res.json({ ok: true, lists: await listLists(db, validate(schemas.accountQuery, req.query).account) });
  });
  router.get('/lists/:id', async (req, res) => {
    res.json({ ok: true, list: await getList(db, validate(schemas.idParam, req.params.id)) });
  });
  return router;
}
