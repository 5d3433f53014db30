import { Router } from 'express';
import { messagesQuery } from '../../../../core/src/sending/schema';
import type { Db } from '../../../../core/src/db';
import { searchMessages } from '../../../../core/src/operator/search';
import { messageStory } from '../../../../core/src/operator/story';
import type { EmailKinds } from '../../../../core/src/delivery/kinds';
import { cancelMessage, messageIdParam, retryMessage } from '../../../../core/src/sending/message-actions';
import { listMessages } from '../../../../core/src/sending/messages';
import { validate } from '../../../../core/src/validate';
import { audit, ownerIn } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/**
 * GET /admin/api/messages (docs/api.md): the latest messages, by recipient or account; /messages/search finds them by
 * anything the console's search box takes; /messages/:id is a message's story, with retry and cancel beside it.
 */
export function messagesRouter(db: Db, kinds: EmailKinds): Router {
  const router = Router();
  router
    .route('/messages')
    .get(async (req, res) => {
      const query = validate<{ to?: string; limit: number; account?: number }>(messagesQuery, req.query);
      res.json({ ok: true, messages: await listMessages(db, { ...query, account: scopeOf(res, query.account) }) });
    })
    .all(methodNotAllowed);
  router
    .route('/messages/search')
    .get(async (req, res) => {
      const found = await searchMessages(db, req.query, scopeOf(res));
      res.json({ ok: true, messages: found.rows, next: found.next, kind: found.kind });
    })
    .all(methodNotAllowed);
  router
    .route('/messages/:id')
    .get(async (req, res) => {
      res.json({ ok: true, ...(await messageStory(db, kinds, validate(messageIdParam, req.params.id))) });
    })
    .all(methodNotAllowed);
  router
    .route('/messages/:id/retry')
    .post(async (req, res) => {
      const id = validate<string>(messageIdParam, req.params.id);
      // the row and the entry commit together; its job is promoted or added after (core/after-commit.ts)
      res.json({ ok: true, message: await audit(req, res)(db, { action: 'retry', resource: 'message', id, after: (m) => m, accountIn: ownerIn('message', id) }, (db) => retryMessage(db, id)) });
    })
    .all(methodNotAllowed);
  router
    .route('/messages/:id/cancel')
    .post(async (req, res) => {
      const id = validate<string>(messageIdParam, req.params.id);
      res.json({ ok: true, message: await audit(req, res)(db, { action: 'cancel', resource: 'message', id, after: (m) => m, accountIn: ownerIn('message', id) }, (db) => cancelMessage(db, id)) });
    })
    .all(methodNotAllowed);
  return router;
}
