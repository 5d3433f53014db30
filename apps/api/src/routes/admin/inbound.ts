import { Router } from 'express';
import { inboundQuery } from '../../../../core/src/admin-schemas';
import type { Db } from '../../../../core/src/db';
import { listInbound } from '../../../../core/src/inbound/list';
import { validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

/** GET /admin/api/inbound?mailbox=&unmatched=&limit= (docs/inbound.md): the emails the IMAP reader handled, newest first. */
export function inboundRouter(db: Db): Router {
  const router = Router();
  router
    .route('/inbound')
    .get(async (req, res) => {
      const { mailbox, unmatched, limit } = validate<{ mailbox?: number; unmatched?: boolean; limit: number }>(inboundQuery, req.query);
      res.json({ ok: true, messages: await listInbound(db, { mailbox, unmatched, limit }) });
    })
    .all(methodNotAllowed);
  return router;
}
