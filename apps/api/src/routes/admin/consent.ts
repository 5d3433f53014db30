import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { consentExport, subscriberConsent } from '../../../../core/src/consent/ledger';
import { idParam, validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/subscribers/:id/consent (docs/preferences.md): a subscriber's consent ledger, and its export as a file. */
export function consentRouter(db: Db): Router {
  const router = Router();
  router
    .route('/subscribers/:id/consent')
    .get(async (req, res) => {
      res.json({ ok: true, ...(await subscriberConsent(db, validate(idParam, req.params.id))) });
    })
    .all(methodNotAllowed);

  router
    .route('/subscribers/:id/consent/export')
    .get(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const body = await consentExport(db, id);
      res.set({ 'Content-Disposition': `attachment; filename="subscriber-${id}-consent.json"`, 'Cache-Control': 'no-store' });
      res.json({ ok: true, ...body });
    })
    .all(methodNotAllowed);
  return router;
}
