import { Router } from 'express';
import { readClickToken, readOpenToken, recordClick, recordOpen } from '../../../core/src/analytics/tracking';
import type { Db } from '../../../core/src/db';
import { clickDecides } from '../../../core/src/outreach/paths';
import { logger } from '../../../core/src/logger';
import { methodNotAllowed } from '../middleware/errors';
import * as html from '../../../core/src/subscribers/html';
import { pageErrors, send } from './pages';

/** A transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * The opt-in tracking links of docs/analytics.md. PUBLIC_URL/c/<token>: 302 to the address the token signs, after the
 * click is recorded (HEAD and early GETs as a scanner's); an altered or made-up token answers 404 and redirects nowhere.
 * PUBLIC_URL/o/<token>.gif: the open image. A recording Postgres refuses never keeps a person from their link.
 */
export function trackingRouter(db: Db): Router {
  const router = Router();

  // Express answers HEAD with the GET route: a HEAD is recorded as a scanner's
  router
    .route('/c/:token')
    .get(async (req, res) => {
      const click = readClickToken(req.params.token);
      if (!click) return send(res, 404, html.notFoundPage());
      try {
        const recorded = await recordClick(db, { ...click, head: req.method === 'HEAD' });
        // a person's first click decides a sequence's condition on clicks at once (docs/outreach.md, branches)
        if (recorded?.first && !recorded.scanner) await clickDecides(db, click.messageId);
      } catch (err) {
        logger.warn({ err: (err as Error).message, message: click.messageId }, 'a click was not recorded');
      }
      res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).redirect(302, click.url);
    })
    .all(methodNotAllowed);

  router
    .route('/o/:token')
    .get(async (req, res) => {
      const messageId = readOpenToken(req.params.token);
      if (!messageId) return send(res, 404, html.notFoundPage());
      if (req.method === 'GET') {
        try {
          await recordOpen(db, messageId);
        } catch (err) {
          logger.warn({ err: (err as Error).message, message: messageId }, 'an open was not recorded');
        }
      }
      res.status(200).set({ 'Content-Type': 'image/gif', 'Cache-Control': 'no-store, private', 'Content-Length': String(PIXEL.length) }).end(PIXEL);
    })
    .all(methodNotAllowed);

  router.use(pageErrors);
  return router;
}
