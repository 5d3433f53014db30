import { Router } from 'express';
import { entriesQuery } from '../../../../core/src/keyset';
import type { Db, Tx } from '../../../../core/src/db';
import { deleteStopEntry, listStopEntries } from '../../../../core/src/stop-list/entries';
import { idParam, validate } from '../../../../core/src/validate';
import { stopEntryDeletion } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

type EntriesQuery = { account: number; after?: number; limit: number };

/** /admin/api/stop-list (docs/api.md): an account's "never write to" addresses and domains in keyset pages; removal of one. */
export function stopListRouter(db: Db): Router {
  const router = Router();
  router
    .route('/stop-list')
    .get(async (req, res) => {
      res.json({ ok: true, ...(await listStopEntries(db, validate<EntriesQuery>(entriesQuery, req.query))) });
    })
    .all(methodNotAllowed);

  router
    .route('/stop-list/:id')
    .delete(async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res)(db, stopEntryDeletion(id), (db) => deleteStopEntry(db, id));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);
  return router;
}
