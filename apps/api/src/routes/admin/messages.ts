import { Router } from 'express';
import * as schemas from '../../../../core/src/admin-schemas';
import type { Db } from '../../../../core/src/db';
import { listMessages } from '../../../../core/src/sending/messages';
import { validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

/** GET /admin/api/messages (docs/api.md): the latest messages, by recipient or account. */
export function messagesRouter(db: Db): Router {
  const router = Router();
  router
    .route('/messages')
    .get(async (req, res) => {
      res.json({ ok: true, messages: await listMessages(db, validate(schemas.messagesQuery, req.query)) });
    })
    .all(methodNotAllowed);
  return router;
}
