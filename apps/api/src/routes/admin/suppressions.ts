import { Router } from 'express';
import { entriesQuery } from '../../../../core/src/keyset';
import type { Db, Tx } from '../../../../core/src/db';
import { deleteSuppression, listSuppressions } from '../../../../core/src/suppressions';
import { idParam, validate } from '../../../../core/src/validate';
import { suppressionDeletion } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

type EntriesQuery = { account: number; after?: number; limit: number };

/** /admin/api/suppressions (docs/api.md): an account's suppressed addresses in keyset pages; removal of one. */
export function suppressionsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/suppressions')
    .get(async (req, res) => {
      res.json({ ok: true, ...(await listSuppressions(db, validate<EntriesQuery>(entriesQuery, req.query))) });
    })
    .all(methodNotAllowed);

  router
    .route('/suppressions/:id')
    .delete(async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res)(db, suppressionDeletion(id), (db) => deleteSuppression(db, id));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);
  return router;
}
