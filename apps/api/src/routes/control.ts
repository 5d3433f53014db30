import { Router } from 'express';
import * as schemas from '../../../core/src/admin-schemas';
import { writeSubscribersCsv } from '../../../core/src/subscribers/csv';
import { deleteStopEntry, listStopEntries } from '../../../core/src/stop-list/entries';
import { deleteSuppression, listSuppressions } from '../../../core/src/suppressions';
import type { Db } from '../../../core/src/db';
import { checkImap, checkSmtp } from '../../../core/src/delivery/check';
import { NotFound } from '../../../core/src/errors';
import { browseSubscribers } from '../../../core/src/subscribers/browse';
import { getCampaign, listCampaigns } from '../../../core/src/outreach/campaigns';
import { campaignStats } from '../../../core/src/outreach/stats';
import { changeList, getList, listLists } from '../../../core/src/subscribers/lists';
import { validate } from '../../../core/src/validate';
import { methodNotAllowed } from '../middleware/errors';

type EntriesQuery = { account: number; after?: number; limit: number };
type SubscribersQuery = { status?: 'pending' | 'active' | 'unsubscribed' | 'bounced' | 'complained'; q?: string; after?: number; limit: number };

/**
 * The operator's control plane beyond create: reads of campaigns and lists, list changes, a list's
 * subscribers (filtered, keyset pages, CSV), the suppression and stop lists (read, remove an entry), and a mailbox's
 * connection test. Thin: each route validates and calls core.
 */
export function controlRouter(db: Db): Router {
  const router = Router();
  router.get('/campaigns', async (req, res) => {
    res.json({ ok: true, campaigns: await listCampaigns(db, validate(schemas.accountQuery, req.query).account) });
  });
  router.get('/campaigns/:id/stats', async (req, res) => {
    res.json({ ok: true, stats: await campaignStats(db, validate(schemas.idParam, req.params.id)) });
  });
  router.get('/campaigns/:id', async (req, res) => {
    res.json({ ok: true, campaign: await getCampaign(db, validate(schemas.idParam, req.params.id)) });
  });
  router.get('/lists', async (req, res) => {
    res.json({ ok: true, lists: await listLists(db, validate(schemas.accountQuery, req.query).account) });
  });
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
      const list = await getList(db, validate(schemas.idParam, req.params.id));
      const { status } = validate<SubscribersQuery>(schemas.subscribersQuery, req.query);
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="list-${list.id}.csv"`, 'Cache-Control': 'no-store' });
      await writeSubscribersCsv(db, list.id, res, { status });
      res.end();
    })
    .all(methodNotAllowed);
  // the account's "never write to" lists: keyset pages by account, and removal of one entry
  const entryRoutes = (path: string, list: (db: Db, query: EntriesQuery) => Promise<object>, remove: (db: Db, id: number) => Promise<void>) => {
    router
      .route(path)
      .get(async (req, res) => {
        res.json({ ok: true, ...(await list(db, validate<EntriesQuery>(schemas.entriesQuery, req.query))) });
      })
      .all(methodNotAllowed);
    router
      .route(`${path}/:id`)
      .delete(async (req, res) => {
        await remove(db, validate(schemas.idParam, req.params.id));
        res.json({ ok: true });
      })
      .all(methodNotAllowed);
  };
  entryRoutes('/suppressions', listSuppressions, deleteSuppression);
  entryRoutes('/stop-list', listStopEntries, deleteStopEntry);
  router
    .route('/mailboxes/:id/test')
    .post(async (req, res) => {
      const id = validate(schemas.idParam, req.params.id);
      const mailbox = await db.mailbox.findUnique({ where: { id } });
      if (!mailbox) throw new NotFound(`no mailbox with id ${id}`);
      // a server that refuses is an answer about the mailbox, not a failure of this call: 200 with ok inside
      const [smtp, imap] = await Promise.all([checkSmtp(mailbox), checkImap(mailbox)]);
      res.json({ ok: true, smtp, imap });
    })
    .all(methodNotAllowed);
  return router;
}
