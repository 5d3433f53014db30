import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { mxFile, validMxFileSignature } from '../../../core/src/mx/message';
import { mxMessageById } from '../../../core/src/mx/repository';
import * as html from '../../../core/src/subscribers/html';
import { methodNotAllowed } from '../middleware/errors';
import { pageErrors, send } from './pages';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * PUBLIC_URL/inbound/mx/<id>/<raw | n>?expires=&signature= (docs/mx.md): a message the MX took, as received, or its
 * n-th attachment, for whoever holds the signed URL of its inbound.received until it expires. A bad, altered or
 * expired signature and a message gone (retention) answer 404. Served as a download, never rendered.
 */
export function mxFilesRouter(db: Db): Router {
  const router = Router();
  router
    .route('/inbound/mx/:id/:file')
    .get(async (req, res) => {
      const { id, file } = req.params;
      const valid = UUID.test(id) && validMxFileSignature(id, file, req.query.expires, req.query.signature);
      const row = valid ? await mxMessageById(db, id) : null;
      const found = row ? await mxFile(row, file) : undefined;
      if (!found) return send(res, 404, html.notFoundPage());
      const name = found.filename.replace(/[^\x20-\x7e]|["\\]/g, '_') || 'attachment';
      res
        .status(200)
        .set({
          'Content-Type': /^[\w.+-]+\/[\w.+-]+$/.test(found.contentType) ? found.contentType : 'application/octet-stream',
          'Content-Disposition': `attachment; filename="${name}"`,
          'X-Content-Type-Options': 'nosniff',
          'Cache-Control': 'private, no-store',
          'Content-Security-Policy': "sandbox; default-src 'none'",
        })
        .end(found.content);
    })
    .all(methodNotAllowed);
  router.use(pageErrors);
  return router;
}
