import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { actOnMxMessage } from '../../../../core/src/mx/browse';
import { addRoute, changeRoute, getRoute, listRoutes, mxMessageIdParam, removeRoute, routeInput, routePatch, routesQuery } from '../../../../core/src/mx/routes';
import { idParam, validate } from '../../../../core/src/validate';
import { mxMessageChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** Inbound routes of the MX and what is done with held messages (docs/mx.md), under /admin/api. */
export function mxRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(routesQuery, query).account;

  router
    .route('/routes')
    .post(async (req, res) => {
      const input = validate<Parameters<typeof addRoute>[1]>(routeInput, req.body);
      res.status(201).json({ ok: true, route: await audit(req, res)(db, { action: 'create', resource: 'route', after: (r) => r, account: input.account }, (db) => addRoute(db, input)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, routes: await listRoutes(db, scopeOf(res, scope(req.query))) });
    })
    .all(methodNotAllowed);

  router
    .route('/routes/:id')
    .get(async (req, res) => {
      res.json({ ok: true, route: await getRoute(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .patch(async (req, res) => {
      const [id, account, patch] = [validate(idParam, req.params.id), scope(req.query), validate(routePatch, req.body)];
      res.json({ ok: true, route: await audit(req, res)(db, { action: 'update', resource: 'route', id, before: (tx) => getRoute(tx, id, account), after: (r) => r }, (db) => changeRoute(db, id, patch, account)) });
    })
    .delete(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      await audit(req, res)(db, { action: 'delete', resource: 'route', id, before: (tx) => getRoute(tx, id, account) }, (db) => removeRoute(db, id, account));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  for (const action of ['release', 'drop', 'replay'] as const) {
    router
      .route(`/inbound/:id/${action}`)
      .post(async (req, res) => {
        const id = validate<string>(mxMessageIdParam, req.params.id);
        await audit(req, res)(db, mxMessageChange(action, id), (db) => actOnMxMessage(db, id, action));
        res.json({ ok: true });
      })
      .all(methodNotAllowed);
  }
  return router;
}
