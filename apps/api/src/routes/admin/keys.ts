import { Router } from 'express';
import { keyInput } from '../../../../core/src/auth/schema';
import { createKeyAudited, listKeys, revokeKeyEverywhere } from '../../../../core/src/auth/keys';
import type { Db } from '../../../../core/src/db';
import { idParam, listingQuery, validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/keys (docs/api.md): create one (the token is in this answer only), list them, revoke one. */
export function keysRouter(db: Db): Router {
  const router = Router();
  router
    .route('/keys')
    .post(async (req, res) => {
      const { key, token } = await createKeyAudited(db, validate(keyInput, req.body), auditContext(req, res, 'admin-api'));
      res.status(201).json({ ok: true, key: { ...key, token } });
    })
    .get(async (req, res) => {
      res.json({ ok: true, keys: await listKeys(db, scopeOf(res, validate(listingQuery, req.query).account)) });
    })
    .all(methodNotAllowed);

  router
    .route('/keys/:id')
    .delete(async (req, res) => {
      res.json({ ok: true, key: await revokeKeyEverywhere(db, validate(idParam, req.params.id), auditContext(req, res, 'admin-api')) });
    })
    .all(methodNotAllowed);
  return router;
}
