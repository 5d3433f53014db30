import { Router } from 'express';
import { importQuery } from '../../../../core/src/imports/schema';
import type { Db } from '../../../../core/src/db';
import { UnsupportedMediaType } from '../../../../core/src/errors';
import { getImport, importMaxBytes, importTooLarge, receiveImport, type ImportFormat, type ImportStatusValue, type ImportView } from '../../../../core/src/imports';
import { idParam, validate } from '../../../../core/src/validate';
import type { VerifyMode } from '../../../../core/src/verify';
import { audit, importChange } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

const FORMATS: Record<string, ImportFormat> = { 'text/csv': 'csv', 'application/x-ndjson': 'ndjson' };

/**
 * POST /admin/api/lists/:id/import and GET /admin/api/imports/:id. Mounted ahead of the JSON parser (admin/index.ts).
 * Imports of subscribers (docs/lists.md, "Import"): the body, CSV or NDJSON, is streamed into Postgres as it arrives
 * (the API holds a couple of thousand lines at once, not the body, so it takes no share of the JSON bodies' budget) and
 * applied by a worker; the answer is 202 with the import to follow. At most IMPORT_MAX_BYTES: a body declaring more is
 * refused before a byte of it is read, and a chunked one is read up to the limit, then refused (413 either way; the
 * server settles the rest, middleware/unread-body.ts).
 */
export function importsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/lists/:id/import')
    .post(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      const format = FORMATS[type];
      if (!format) throw new UnsupportedMediaType('send the import as Content-Type: text/csv (a header line first) or application/x-ndjson (one object a line)');
      const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
      if (encoding !== 'identity') throw new UnsupportedMediaType('send the import uncompressed (no Content-Encoding)');
      const { status, verify } = validate<{ status?: ImportStatusValue; verify?: VerifyMode }>(importQuery, req.query);
      const maxBytes = importMaxBytes();
      if (Number(req.get('content-length') ?? 0) > maxBytes) throw importTooLarge(maxBytes);
      // an iterator left early (at the limit, or at a bad header) must leave the request whole, not destroy it: a
      // destroyed request loses its socket, and with it the answer
      const body = req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
      // the lines stream into Postgres on connections of their own; the import marked received is the change, written
      // with its entry (its job queued once both are committed)
      const commit = (work: (db: Db) => Promise<ImportView>) => audit(req, res)(db, importChange(id, format), work);
      const imported = await receiveImport(db, id, format, body, { defaultStatus: status, maxBytes, verify, commit });
      res.status(202).json({ ok: true, import: { id: imported.id, status: imported.status } });
    })
    .all(methodNotAllowed);
  router
    .route('/imports/:id')
    .get(async (req, res) => {
      res.json({ ok: true, import: await getImport(db, validate(idParam, req.params.id)) });
    })
    .all(methodNotAllowed);
  return router;
}
