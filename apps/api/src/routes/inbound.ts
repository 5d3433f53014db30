import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { listInboundOf } from '../../../core/src/mx/inbound-page';
import { methodNotAllowed } from '../middleware/errors';

/** docs/api.md: the key's account's received emails (message.received), oldest first after `after`. */
export function inboundRoutes(router: Router, db: Db): void {
  router
    .route('/inbound')
    .get(async (req, res) => {
      res.json(await listInboundOf(db, res.locals.key, req.query));
    })
    .all(methodNotAllowed);
}
