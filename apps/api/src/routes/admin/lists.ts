import { Router } from 'express';
import * as schemas from '../../../../core/src/admin-schemas';
import type { Db } from '../../../../core/src/db';
import { lagHeader, type Reads } from '../../../../core/src/replicas';
import { browseSubscribers } from '../../../../core/src/subscribers/browse';
import { writeSubscribersCsv } from '../../../../core/src/subscribers/csv';
import { changeList, createList, getList, listLists } from '../../../../core/src/subscribers/lists';
import { validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';

type SubscribersQuery = { status?: 'pending' | 'active' | 'unsubscribed' | 'bounced' | 'complained'; q?: string; after?: number; limit: number };

/**
 * /admin/api/lists (docs/api.md, docs/lists.md): create, list an account's, read and change one, its subscribers
 * (filtered, keyset pages) and their CSV export (read from the replica when there is one). An import is imports.ts's.
 */
export function listsRouter(db: Db, reads: Reads): Router {
  const router = Router();
  router
    .route('/lists')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, list: await createList(db, validate(schemas.listInput, req.body)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, lists: await listLists(db, validate(schemas.accountQuery, req.query).account) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id')
    .get(async (req, res) => {
      res.json({ ok: true, list: await getList(db, validate(schemas.idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(schemas.idParam, req.params.id);
      res.json({ ok: true, list: await changeList(db, id, validate(schemas.listChanges, req.body)) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id/subscribers')
    .get(async (req, res) => {
      const list = await getList(db, validate(schemas.idParam, req.params.id));
      const query = validate<SubscribersQuery>(schemas.subscribersQuery, req.query);
      const page = await browseSubscribers(db, list.id, { status: query.status, search: query.q, after: query.after, limit: query.limit });
      res.json({ ok: true, subscribers: page.rows, next: page.next === null ? null : Number(page.next) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id/subscribers.csv')
    .get(async (req, res) => {
      const list = await getList(reads.db, validate(schemas.idParam, req.params.id));
      const { status } = validate<SubscribersQuery>(schemas.subscribersQuery, req.query);
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="list-${list.id}.csv"`, 'Cache-Control': 'no-store', ...(await lagHeader(reads)) });
      await writeSubscribersCsv(reads.db, list.id, res, { status });
      res.end();
    })
    .all(methodNotAllowed);
  return router;
}
