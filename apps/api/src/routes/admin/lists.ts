import { Router } from 'express';
import { listChanges, listInput, subscribersQuery } from '../../../../core/src/subscribers/schema';
import type { Db, Tx } from '../../../../core/src/db';
import { lagHeader, type Reads } from '../../../../core/src/replicas';
import { browseSubscribers } from '../../../../core/src/subscribers/browse';
import { writeSubscribersCsv } from '../../../../core/src/subscribers/csv';
import { changeList, createList, getList, listLists } from '../../../../core/src/subscribers/lists';
import { accountQuery, idParam, validate } from '../../../../core/src/validate';
import { audit, ownerIn } from '../../middleware/audit';
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
      const input = validate(listInput, req.body);
      res.status(201).json({ ok: true, list: await audit(req, res)(db, { action: 'create', resource: 'list', after: (l) => l, account: input.account }, (db) => createList(db, input)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, lists: await listLists(db, validate(accountQuery, req.query).account) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id')
    .get(async (req, res) => {
      res.json({ ok: true, list: await getList(db, validate(idParam, req.params.id)) });
    })
    .patch(async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(listChanges, req.body);
      const change = { action: 'update', resource: 'list', id, before: (tx: Tx) => getList(tx, id), after: (l: unknown) => l, accountIn: ownerIn('list', id) };
      res.json({ ok: true, list: await audit(req, res)(db, change, (db) => changeList(db, id, changes)) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id/subscribers')
    .get(async (req, res) => {
      const list = await getList(db, validate(idParam, req.params.id));
      const query = validate<SubscribersQuery>(subscribersQuery, req.query);
      const page = await browseSubscribers(db, list.id, { status: query.status, search: query.q, after: query.after, limit: query.limit });
      res.json({ ok: true, subscribers: page.rows, next: page.next === null ? null : Number(page.next) });
    })
    .all(methodNotAllowed);

  router
    .route('/lists/:id/subscribers.csv')
    .get(async (req, res) => {
      const list = await getList(reads.db, validate(idParam, req.params.id));
      const { status } = validate<SubscribersQuery>(subscribersQuery, req.query);
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="list-${list.id}.csv"`, 'Cache-Control': 'no-store', ...(await lagHeader(reads)) });
      await writeSubscribersCsv(reads.db, list.id, res, { status });
      res.end();
    })
    .all(methodNotAllowed);
  return router;
}
