import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { signedAttachment } from '../../../core/src/inbound/received';
import * as html from '../../../core/src/subscribers/html';
import { methodNotAllowed } from '../middleware/errors';
import { pageErrors, send } from './pages';

/**
 * PUBLIC_URL/inbound/files/<id>?expires=&signature= (docs/inbound-events.md): an attachment of an inbound email, for
 * whoever holds the signed URL until it expires. A bad, altered or expired signature, an attachment kept as metadata only
 * and one gone with its email (RETENTION_DAYS) all answer 404. Served as a download, never rendered by the browser.
 */
export function inboundFilesRouter(db: Db): Router {
  const router = Router();
  router
    .route('/inbound/files/:id')
    .get(async (req, res) => {
      const file = await signedAttachment(db, req.params.id, req.query);
      if (!file) return send(res, 404, html.notFoundPage());
      const name = file.filename.replace(/[^\x20-\x7e]|["\\]/g, '_') || 'attachment';
      res
        .status(200)
        .set({
          'Content-Type': /^[\w.+-]+\/[\w.+-]+$/.test(file.content_type) ? file.content_type : 'application/octet-stream',
          'Content-Disposition': `attachment; filename="${name}"; filename*=UTF-8''${encodeURIComponent(file.filename || 'attachment')}`,
          'X-Content-Type-Options': 'nosniff',
          'Cache-Control': 'private, no-store',
          'Content-Security-Policy': "sandbox; default-src 'none'",
        })
        .end(file.content);
    })
    .all(methodNotAllowed);
  router.use(pageErrors);
  return router;
}
