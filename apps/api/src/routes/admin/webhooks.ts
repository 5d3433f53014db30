import { Router } from 'express';
import type { Db, Tx } from '../../../../core/src/db';
import { idParam, validate } from '../../../../core/src/validate';
import * as schemas from '../../../../core/src/webhooks/schema';
import { webhookChange } from '../../../../core/src/changes';
import { changeWebhook, createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, rotateSecret } from '../../../../core/src/webhooks/service';
import { audit } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** The webhook endpoints of docs/webhooks.md (under /admin/api). The secret is in the create and rotate answers only. */
export function webhooksRouter(db: Db): Router {
  const router = Router();

  router
    .route('/webhooks')
    .post(async (req, res) => {
      const input = validate(schemas.webhookInput, req.body);
      const webhook = await audit(req, res)(db, { action: 'create', resource: 'webhook', after: (w) => w }, (db) => createWebhook(db, input));
      res.status(201).json({ ok: true, webhook });
    })
    .get(async (req, res) => {
      const { account } = validate(schemas.webhooksQuery, req.query);
      res.json({ ok: true, webhooks: await listWebhooks(db, scopeOf(res, account)) });
    })
    .all(methodNotAllowed);

  router
    .route('/webhooks/:id')
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(schemas.webhookChanges, req.body);
      res.json({ ok: true, webhook: await audit(req, res)(db, webhookChange('update', id), (db) => changeWebhook(db, id, changes)) });
    })
    .delete(async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res)(db, { ...webhookChange('delete', id), after: undefined }, (db) => deleteWebhook(db, id));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/webhooks/:id/rotate')
    .post(async (req, res) => {
      const id = validate(idParam, req.params.id);
      res.json({ ok: true, webhook: await audit(req, res)(db, webhookChange('rotate', id), (db) => rotateSecret(db, id)) });
    })
    .all(methodNotAllowed);

  router
    .route('/webhooks/:id/deliveries')
    .get(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const { limit } = validate(schemas.deliveriesQuery, req.query);
      res.json({ ok: true, deliveries: await listDeliveries(db, id, limit) });
    })
    .all(methodNotAllowed);

  return router;
}
