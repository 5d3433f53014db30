import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { atomFeed, archivePage, issuePage } from '../../../core/src/archive/pages';
import { archivedIssue, archivedIssues, publicList } from '../../../core/src/archive/service';
import * as html from '../../../core/src/subscribers/html';
import { methodNotAllowed } from '../middleware/errors';
import { pageErrors, send } from './pages';

/**
 * A public list's archive under PUBLIC_URL/archive/<key> (docs/preferences.md): its page, each issue and the Atom feed.
 * A private list, or an unknown one, answers 404 alike.
 */
export function archiveRouter(db: Db): Router {
  const router = Router();
  router
    .route('/archive/:key')
    .get(async (req, res) => {
      const list = await publicList(db, req.params.key);
      if (!list) return send(res, 404, html.notFoundPage());
      send(res, 200, archivePage(list, await archivedIssues(db, list)));
    })
    .all(methodNotAllowed);

  router
    .route('/archive/:key/feed.xml')
    .get(async (req, res) => {
      const list = await publicList(db, req.params.key);
      if (!list) return send(res, 404, html.notFoundPage());
      res.status(200).set({ 'Content-Type': 'application/atom+xml; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }).send(atomFeed(list, await archivedIssues(db, list)));
    })
    .all(methodNotAllowed);

  router
    .route('/archive/:key/:id')
    .get(async (req, res) => {
      const list = await publicList(db, req.params.key);
      const id = /^[1-9][0-9]{0,9}$/.test(req.params.id) ? Number(req.params.id) : null;
      const issue = list && id !== null && id <= 2_147_483_647 ? await archivedIssue(db, list, id) : null;
      if (!list || !issue) return send(res, 404, html.notFoundPage());
      send(res, 200, issuePage(list, issue));
    })
    .all(methodNotAllowed);

  router.use(pageErrors);
  return router;
}
