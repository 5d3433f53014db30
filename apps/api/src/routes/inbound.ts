import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { listInbound } from '../../../core/src/inbound/list';
import { Joi, validate } from '../../../core/src/validate';
import { methodNotAllowed } from '../middleware/errors';

const query = Joi.object({
  mailbox: Joi.number().integer().positive(),
  unmatched: Joi.boolean(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** GET /admin/api/inbound?mailbox=&unmatched=&limit= (docs/inbound.md): the emails the IMAP reader handled, newest first. */
export function inboundRouter(db: Db): Router {
  const router = Router();
  router
    .route('/inbound')
    .get(async (req, res) => {
      const { mailbox, unmatched, limit } = validate(query, req.query) as { mailbox?: number; unmatched?: boolean; limit: number };
      res.json({ ok: true, messages: await listInbound(db, { mailbox, unmatched, limit }) });
    })
    .all(methodNotAllowed);
  return router;
}
