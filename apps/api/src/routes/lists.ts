import type { Router } from 'express';
import { listListsOf } from '../../../core/src/subscribers/operations';
import type { Db } from '../../../core/src/db';
import { methodNotAllowed } from '../middleware/errors';

/** docs/api.md: the key's account's lists, each with its active subscriber count. */
export function listsRoutes(router: Router, db: Db): void {
  router
    .route('/lists')
    .get(async (_req, res) => {
      res.json(await listListsOf(db, res.locals.key));
    })
    .all(methodNotAllowed);
}
