import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { idParam } from '../../../../core/src/admin-schemas';
import { validate } from '../../../../core/src/validate';
import * as schemas from '../../../../core/src/templates/schema';
import {
  changeTemplate,
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  listVersions,
  previewTemplate,
  restoreVersion,
} from '../../../../core/src/templates/service';
import { sendTestEmail } from '../../../../core/src/templates/test-send';
import { methodNotAllowed } from '../../middleware/errors';

/** The templates and layouts of docs/templates.md (under /admin/api): versions, restore, preview and a test send. */
export function templatesRouter(db: Db): Router {
  const router = Router();

  router
    .route('/templates')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, template: await createTemplate(db, validate(schemas.templateInput, req.body)) });
    })
    .get(async (req, res) => {
      const { account, kind } = validate(schemas.templatesQuery, req.query);
      res.json({ ok: true, templates: await listTemplates(db, account, kind) });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id')
    .get(async (req, res) => {
      res.json({ ok: true, template: await getTemplate(db, validate(idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      res.json({ ok: true, template: await changeTemplate(db, id, validate(schemas.templateChanges, req.body)) });
    })
    .delete(async (req, res) => {
      await deleteTemplate(db, validate(idParam, req.params.id));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id/versions')
    .get(async (req, res) => {
      res.json({ ok: true, versions: await listVersions(db, validate(idParam, req.params.id)) });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id/restore')
    .post(async (req, res) => {
      const id = validate(idParam, req.params.id);
      res.json({ ok: true, template: await restoreVersion(db, id, validate(schemas.restoreInput, req.body).version) });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id/preview')
    .post(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const { variables } = validate(schemas.previewInput, req.body ?? {});
      res.json({ ok: true, ...(await previewTemplate(db, id, variables)) });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id/test')
    .post(async (req, res) => {
      const id = validate(idParam, req.params.id);
      res.status(202).json({ ok: true, message: await sendTestEmail(db, id, validate(schemas.testSendInput, req.body)) });
    })
    .all(methodNotAllowed);

  return router;
}
