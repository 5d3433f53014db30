import { Router } from 'express';
import type { Db, Tx } from '../../../../core/src/db';
import { idParam, validate } from '../../../../core/src/validate';
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
import { sendTestEmail } from '../../../../core/src/sending/template-test';
import { templateChange } from '../../../../core/src/changes';
import { scopeOf } from '../../middleware/admin';
import { audit } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

/** The templates and layouts of docs/templates.md (under /admin/api): versions, restore, preview and a test send. */
export function templatesRouter(db: Db): Router {
  const router = Router();

  router
    .route('/templates')
    .post(async (req, res) => {
      const input = validate(schemas.templateInput, req.body);
      res.status(201).json({ ok: true, template: await audit(req, res)(db, { action: 'create', resource: 'template', after: (t) => t }, (db) => createTemplate(db, input)) });
    })
    .get(async (req, res) => {
      const { account, kind } = validate(schemas.templatesQuery, req.query);
      res.json({ ok: true, templates: await listTemplates(db, scopeOf(res, account), kind) });
    })
    .all(methodNotAllowed);

  router
    .route('/templates/:id')
    .get(async (req, res) => {
      res.json({ ok: true, template: await getTemplate(db, validate(idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(schemas.templateChanges, req.body);
      res.json({ ok: true, template: await audit(req, res)(db, templateChange('update', id), (db) => changeTemplate(db, id, changes)) });
    })
    .delete(async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res)(db, { ...templateChange('delete', id), after: undefined }, (db) => deleteTemplate(db, id));
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
      const { version } = validate(schemas.restoreInput, req.body);
      res.json({ ok: true, template: await audit(req, res)(db, templateChange('restore', id), (db) => restoreVersion(db, id, version)) });
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
      const input = validate(schemas.testSendInput, req.body);
      // the test email's row and the entry commit together; its delivery is queued after (core/after-commit.ts)
      const change = { action: 'test-send', resource: 'template', id, after: (m: unknown) => m, accountIn: async (tx: Tx) => (await getTemplate(tx, id)).account };
      res.status(202).json({ ok: true, message: await audit(req, res)(db, change, (db) => sendTestEmail(db, id, input)) });
    })
    .all(methodNotAllowed);

  return router;
}
