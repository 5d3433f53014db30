import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { listLists } from '../../../core/src/services/lists';
import { methodNotAllowed } from '../middleware/errors';

/** Spec 4.2: the key's account's lists, each with its active subscriber count. */
export function listsRoutes(router: Router, db: Db): void {
  router
    .route('/lists')
    .get(async (_req, res) => {
      res.json({ ok: true, lists: await listLists(db, res.locals.key.accountId) });
    })
    .all(methodNotAllowed);
}
