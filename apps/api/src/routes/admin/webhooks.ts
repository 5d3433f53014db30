import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { idParam } from '../../../../core/src/admin-schemas';
import { validate } from '../../../../core/src/validate';
import * as schemas from '../../../../core/src/webhooks/schemas';
import { changeWebhook, createWebhook, deleteWebhook, listDeliveries, listWebhooks, rotateSecret } from '../../../../core/src/webhooks/service';
import { methodNotAllowed } from '../../middleware/errors';

/** The webhook endpoints of docs/webhooks.md (under /admin/api). The secret is in the create and rotate answers only. */
export function webhooksRouter(db: Db): Router {
  const router = Router();

  router
    .route('/webhooks')
    .post(async (req, res) => {
      const webhook = await createWebhook(db, validate(schemas.webhookInput, req.body));
      res.status(201).json({ ok: true, webhook });
    })
    .get(async (req, res) => {
      const { account } = validate(schemas.webhooksQuery, req.query);
      res.json({ ok: true, webhooks: await listWebhooks(db, account) });
    })
    .all(methodNotAllowed);

  router
    .route('/webhooks/:id')
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      res.json({ ok: true, webhook: await changeWebhook(db, id, validate(schemas.webhookChanges, req.body)) });
    })
    .delete(async (req, res) => {
      await deleteWebhook(db, validate(idParam, req.params.id));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/webhooks/:id/rotate')
    .post(async (req, res) => {
      res.json({ ok: true, webhook: await rotateSecret(db, validate(idParam, req.params.id)) });
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
