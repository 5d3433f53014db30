import { Router } from 'express';
import { mailboxChange as mailboxChangeRules, mailboxInput } from '../../../../core/src/mailboxes/schema';
import type { Db, Tx } from '../../../../core/src/db';
import { createMailboxAudited, findMailbox, listMailboxes, mailboxView } from '../../../../core/src/mailboxes';
import { updateMailbox } from '../../../../core/src/mailbox-settings';
import { testMailbox } from '../../../../core/src/mailbox-settings/connection';
import { idParam, listingQuery, validate } from '../../../../core/src/validate';
import { audit, auditContext, mailboxChange } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/mailboxes (docs/api.md): create, list, change one, test its connection. */
export function mailboxesRouter(db: Db): Router {
  const router = Router();
  router
    .route('/mailboxes')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, mailbox: await createMailboxAudited(db, validate(mailboxInput, req.body), auditContext(req, res, 'admin-api')) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, mailboxes: await listMailboxes(db, scopeOf(res, validate(listingQuery, req.query).account)) });
    })
    .all(methodNotAllowed);

  router
    .route('/mailboxes/:id')
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const input = validate(mailboxChangeRules, req.body);
      // a reconnected mailbox's waiting emails and a change of its limits reach the queue once committed: the entry follows
      res.json({ ok: true, mailbox: await audit(req, res)(db, mailboxChange(id), (db) => updateMailbox(db, id, input)) });
    })
    .all(methodNotAllowed);

  // a server that refuses is an answer about the mailbox, not a failure of this call: 200 with ok inside
  router
    .route('/mailboxes/:id/test')
    .post(async (req, res) => {
      const { smtp, imap } = await testMailbox(db, validate(idParam, req.params.id));
      res.json({ ok: true, smtp, imap });
    })
    .all(methodNotAllowed);
  return router;
}
