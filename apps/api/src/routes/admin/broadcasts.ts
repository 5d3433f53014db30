import { Router } from 'express';
import { audienceQuery, broadcastChanges, broadcastInput, broadcastsQuery } from '../../../../core/src/broadcasts/schema';
import { dryRunAudience } from '../../../../core/src/broadcasts/segment';
import { changeBroadcast, createBroadcast, getBroadcast, listBroadcasts } from '../../../../core/src/broadcasts/service';
import type { Db, Tx } from '../../../../core/src/db';
import { lagHeader, type Reads } from '../../../../core/src/replicas';
import { idParam, validate } from '../../../../core/src/validate';
import { broadcastCreation } from '../../../../core/src/changes';
import { accountOfListKey } from '../../../../core/src/changes/owners';
import { audit, holdTo, ownerIn } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';
import { broadcastLinks } from '../../../../core/src/analytics/tracking';

/** /admin/api/broadcasts (docs/broadcasts.md); the audience's dry run reads the replica when there is one. */
export function broadcastsRouter(db: Db, reads: Reads): Router {
  const router = Router();

  router
    .route('/broadcasts')
    .post(async (req, res) => {
      const input = validate(broadcastInput, req.body);
      const broadcast = await audit(req, res)(db, broadcastCreation(input.list), (db) => createBroadcast(db, input));
      res.status(201).json({ ok: true, broadcast });
    })
    .get(async (req, res) => {
      res.json({ ok: true, broadcasts: await listBroadcasts(db, { ...validate<{ list?: string; limit: number }>(broadcastsQuery, req.query), account: scopeOf(res) }) });
    })
    .all(methodNotAllowed);

  // the dry run of an audience: how many of the list it takes now, by the snapshot's own rule
  router
    .route('/broadcasts/audience')
    .post(async (req, res) => {
      const query = validate(audienceQuery, req.body);
      const owner = await accountOfListKey(db, query.list);
      if (owner !== undefined) holdTo(req, res, owner, 'admin-api');
      const count = await dryRunAudience(reads.db, query.list, query.audience ?? {}, query.topics);
      res.set(await lagHeader(reads)).json({ ok: true, count });
    })
    .all(methodNotAllowed);

  router
    .route('/broadcasts/:id')
    .get(async (req, res) => {
      res.json({ ok: true, broadcast: await getBroadcast(db, validate(idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(broadcastChanges, req.body);
      const change = { action: 'update', resource: 'broadcast', id, before: (tx: Tx) => getBroadcast(tx, id), after: (b: unknown) => b, accountIn: ownerIn('broadcast', id) };
      // a broadcast set sending queues its snapshot's jobs once its rows are committed
      res.json({ ok: true, broadcast: await audit(req, res)(db, change, (db) => changeBroadcast(db, id, changes)) });
    })
    .all(methodNotAllowed);

  // clicks per link of a broadcast with click tracking (docs/analytics.md)
  router
    .route('/broadcasts/:id/links')
    .get(async (req, res) => {
      const broadcast = await getBroadcast(db, validate(idParam, req.params.id));
      res.json({ ok: true, links: await broadcastLinks(db, broadcast.id) });
    })
    .all(methodNotAllowed);

  return router;
}
