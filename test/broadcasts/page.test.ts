import { audiencePage } from '../../apps/core/src/broadcasts/repository';
import { db, rawQuery, type Db } from '../../apps/core/src/db';
import { makeAccount, makeList, makeMailbox } from '../helpers/factories';
import { addActive } from './support';

const LIST_SIZE = 20_000;
const PAGE = 500;

/**
 * A broadcast reads its audience in keyset pages. A page must read about a page of subscribers, neither every
 * subscriber before it (the planner's merge join read the list from its first subscriber for every page: a 100,000
 * list's pages read 2.5 billion rows in all) nor every one after it (joined before the LIMIT, with the snapshot's rows
 * not yet analyzed, as in a broadcast's first minutes, a page at 72,000 of a 100,000 list read the 28,000 after it).
 */
async function pageReads(after: (ids: { first: number; last: number }) => number, analyzed: boolean) {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const list = await makeList(account.id, mailbox.id, { confirm: false });
  const { id: listId } = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  await addActive(listId, LIST_SIZE);
  const broadcast = await db().broadcast.create({ data: { accountId: account.id, listId, subject: 's', html: '<p>h</p>', status: 'sending' } });
  await rawQuery(db(), 'INSERT INTO broadcast_recipients (broadcast_id, subscriber_id) SELECT $1, id FROM subscribers WHERE list_id = $2', [broadcast.id, listId]);
  await rawQuery(db(), 'ANALYZE subscribers');
  if (analyzed) await rawQuery(db(), 'ANALYZE broadcast_recipients');
  const [row] = await rawQuery<{ first: number; last: number }>(db(), 'SELECT min(id) AS first, max(id) AS last FROM subscribers WHERE list_id = $1', [listId]);
  const from = after(row!);

  // the page and the rows it fetched from subscribers, counted on its own connection before and after it (the
  // connection's counts not yet reported may hold earlier statements', such as the snapshot's insert above)
  const { page, fetched } = await db().$transaction(async (tx) => {
    const count = async () => {
      const [stats] = await rawQuery<{ fetched: string }>(tx, `SELECT (idx_tup_fetch + seq_tup_read)::text AS fetched FROM pg_stat_xact_user_tables WHERE relname = 'subscribers'`);
      return Number(stats?.fetched ?? 0);
    };
    // the plan the worker's pool kept for the named statement in a broadcast's first minutes read the recipients by a
    // bitmap and sorted them, not in the index's order (its estimate: 167 rows of 100,000): that plan, made here
    if (!analyzed) await rawQuery(tx, 'SET LOCAL enable_indexscan = off');
    const before = await count();
    const page = await audiencePage(tx as unknown as Db, broadcast.id, from, PAGE);
    return { page, fetched: (await count()) - before };
  });

  expect(page).toHaveLength(PAGE);
  expect(page[0]!.id).toBe(from + 1);
  expect(page.every((p) => p.due)).toBe(true);
  expect(fetched).toBeLessThan(PAGE * 4);
}

it('a page far into the audience reads about a page of subscribers, not the list before it', async () => {
  await pageReads(({ last }) => last - PAGE * 2, true);
});

it("a page read without the index's order (the plan kept in a broadcast's first minutes) reads about a page of subscribers, not the list after it", async () => {
  await pageReads(({ first }) => first + PAGE * 2, false);
});

it('a recipient whose subscriber is gone comes back not due, so the pages walk past it', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const list = await makeList(account.id, mailbox.id, { confirm: false });
  const { id: listId } = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  await addActive(listId, 3);
  const broadcast = await db().broadcast.create({ data: { accountId: account.id, listId, subject: 's', html: '<p>h</p>', status: 'sending' } });
  await rawQuery(db(), 'INSERT INTO broadcast_recipients (broadcast_id, subscriber_id) SELECT $1, id FROM subscribers WHERE list_id = $2', [broadcast.id, listId]);
  const ids = (await db().subscriber.findMany({ where: { listId }, orderBy: { id: 'asc' }, select: { id: true } })).map((s) => s.id);
  await db().subscriber.delete({ where: { id: ids[1]! } });

  const page = await audiencePage(db(), broadcast.id, 0, 10);
  expect(page.map((p) => [p.id, p.due])).toEqual([
    [ids[0], true],
    [ids[1], false],
    [ids[2], true],
  ]);
});
