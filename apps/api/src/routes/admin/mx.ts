import { Router } from 'express';
import { idParam } from '../../../../core/src/admin-schemas';
import type { Db } from '../../../../core/src/db';
import { actOnMxMessage } from '../../../../core/src/mx/browse';
import { addRoute, changeRoute, getRoute, listRoutes, mxMessageIdParam, removeRoute, routeInput, routePatch, routesQuery } from '../../../../core/src/mx/routes';
import { validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

/** Inbound routes of the MX and what is done with held messages (docs/mx.md), under /admin/api. */
export function mxRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(routesQuery, query).account;

  router
    .route('/routes')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, route: await addRoute(db, validate(routeInput, req.body)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, routes: await listRoutes(db, scope(req.query)) });
    })
    .all(methodNotAllowed);

  router
    .route('/routes/:id')
    .get(async (req, res) => {
      res.json({ ok: true, route: await getRoute(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .patch(async (req, res) => {
      res.json({ ok: true, route: await changeRoute(db, validate(idParam, req.params.id), validate(routePatch, req.body), scope(req.query)) });
    })
    .delete(async (req, res) => {
      await removeRoute(db, validate(idParam, req.params.id), scope(req.query));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  for (const action of ['release', 'drop', 'replay'] as const) {
    router
      .route(`/inbound/:id/${action}`)
      .post(async (req, res) => {
        await actOnMxMessage(db, validate<string>(mxMessageIdParam, req.params.id), action);
        res.json({ ok: true });
      })
      .all(methodNotAllowed);
  }
  return router;
}
