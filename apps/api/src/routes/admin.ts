import { Router } from 'express';
import * as schemas from '../../../core/src/admin-schemas';
import type { Db } from '../../../core/src/db';
import { createAccount, listAccounts } from '../../../core/src/accounts';
import { changeCampaign, createCampaign } from '../../../core/src/outreach/campaigns';
import { createKey, listKeys, revokeKeyEverywhere } from '../../../core/src/auth/keys';
import { createList } from '../../../core/src/subscribers/lists';
import { createMailbox, listMailboxes, updateMailbox } from '../../../core/src/mailboxes';
import { listMessages } from '../../../core/src/sending/messages';
import { broadcastsRouter } from './broadcasts';
import { validate } from '../../../core/src/validate';
import { methodNotAllowed } from '../middleware/errors';
import { webhooksRouter } from './webhooks';
import { deliveryStatusRouter } from './delivery-status';
import { inboundRouter } from './inbound';
import { controlRouter } from './control';
import { statsRouter } from './stats';

/** The control plane of docs/operator.md: what the dashboard and `npm run admin` use. */
export function adminRouter(db: Db): Router {
  const router = Router();
  router.use(controlRouter(db));

  router
    .route('/accounts')
    .post(async (req, res) => {
      const account = await createAccount(db, validate(schemas.accountInput, req.body));
      res.status(201).json({ ok: true, account });
    })
    .get(async (_req, res) => {
      res.json({ ok: true, accounts: await listAccounts(db) });
    })
    .all(methodNotAllowed);

  router
    .route('/mailboxes')
    .post(async (req, res) => {
      const mailbox = await createMailbox(db, validate(schemas.mailboxInput, req.body));
      res.status(201).json({ ok: true, mailbox });
    })
    .get(async (_req, res) => {
      res.json({ ok: true, mailboxes: await listMailboxes(db) });
    })
    .all(methodNotAllowed);

  router
    .route('/mailboxes/:id')
    .patch(async (req, res) => {
      const mailbox = await updateMailbox(db, validate(schemas.idParam, req.params.id), validate(schemas.mailboxChange, req.body));
      res.json({ ok: true, mailbox });
    })
    .all(methodNotAllowed);

  router
    .route('/keys')
    .post(async (req, res) => {
      const { key, token } = await createKey(db, validate(schemas.keyInput, req.body));
      res.status(201).json({ ok: true, key: { ...key, token } });
    })
    .get(async (_req, res) => {
      res.json({ ok: true, keys: await listKeys(db) });
    })
    .all(methodNotAllowed);

  router
    .route('/keys/:id')
    .delete(async (req, res) => {
      res.json({ ok: true, key: await revokeKeyEverywhere(db, validate(schemas.idParam, req.params.id)) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists')
    .post(async (req, res) => {
      const list = await createList(db, validate(schemas.listInput, req.body));
      res.status(201).json({ ok: true, list });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns')
    .post(async (req, res) => {
      const campaign = await createCampaign(db, validate(schemas.campaignInput, req.body));
      res.status(201).json({ ok: true, campaign });
    })
    .all(methodNotAllowed);

  router
    .route('/campaigns/:id')
    .patch(async (req, res) => {
      const id = validate(schemas.idParam, req.params.id);
      const changes = validate(schemas.campaignChanges, req.body);
      res.json({ ok: true, campaign: await changeCampaign(db, id, changes) });
    })
    .all(methodNotAllowed);

  router
    .route('/messages')
    .get(async (req, res) => {
      res.json({ ok: true, messages: await listMessages(db, validate(schemas.messagesQuery, req.query)) });
    })
    .all(methodNotAllowed);

  router.use(webhooksRouter(db));

  router.use(deliveryStatusRouter(db));
  router.use(inboundRouter(db));
  router.use(statsRouter(db));
  router.use('/broadcasts', broadcastsRouter(db));
  return router;
}
