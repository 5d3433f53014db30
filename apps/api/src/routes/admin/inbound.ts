import { Router } from 'express';
import { inboundQuery } from '../../../../core/src/inbound/schema';
import type { Db } from '../../../../core/src/db';
import { listInbound } from '../../../../core/src/inbound/list';
import { listMxMessages } from '../../../../core/src/mx/browse';
import type { MxMessageStatus } from '../../../../../generated/prisma/enums';
import { validate } from '../../../../core/src/validate';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/**
 * GET /admin/api/inbound?mailbox=&unmatched=&limit= (docs/inbound.md): the emails the IMAP reader handled, newest first;
 * with `status` (and `account`), the MX's messages in that state (docs/mx.md).
 */
export function inboundRouter(db: Db): Router {
  const router = Router();
  router
    .route('/inbound')
    .get(async (req, res) => {
      const { mailbox, unmatched, limit, status, account } = validate<{ mailbox?: number; unmatched?: boolean; limit: number; status?: MxMessageStatus; account?: number }>(inboundQuery, req.query);
      if (status) return void res.json({ ok: true, messages: await listMxMessages(db, { status, account: scopeOf(res, account), limit }) });
      res.json({ ok: true, messages: await listInbound(db, { mailbox, unmatched, limit, account: scopeOf(res, account) }) });
    })
    .all(methodNotAllowed);
  return router;
}
