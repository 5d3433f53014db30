import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { validate } from '../../../core/src/validate';
import { keyTemplatesQuery } from '../../../core/src/templates/schema';
import { listTemplates } from '../../../core/src/templates/service';
import { methodNotAllowed } from '../middleware/errors';

/** docs/api.md: the key's account's templates and layouts (read only; the admin API writes them). */
export function templatesRoutes(router: Router, db: Db): void {
  router
    .route('/templates')
    .get(async (req, res) => {
      const { kind } = validate(keyTemplatesQuery, req.query);
      res.json({ ok: true, templates: await listTemplates(db, res.locals.key.accountId, kind) });
    })
    .all(methodNotAllowed);
}
