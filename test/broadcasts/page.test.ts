import { audiencePage } from '../../apps/core/src/broadcasts/repository';
import { db, rawQuery, type Db } from '../../apps/core/src/db';
import { makeAccount, makeList, makeMailbox } from '../helpers/factories';
import { addActive } from './support';

const LIST_SIZE = 20_000;
const PAGE = 500;

/**
 * A broadcast reads its audience in keyset pages. A page far into a big list must read about a page of subscribers, not
 * every subscriber before it: the planner's merge join read the list from its first subscriber for every page (a
 * 100,000 list's pages read 2.5 billion rows in all, and its last pages took seconds each).
 */
it('a page far into the audience reads about a page of subscribers, not the list before it', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const list = await makeList(account.id, mailbox.id, { confirm: false });
  const { id: listId } = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  await addActive(listId, LIST_SIZE);
  const broadcast = await db().broadcast.create({ data: { accountId: account.id, listId, subject: 's', html: '<p>h</p>', status: 'sending' } });
  await rawQuery(db(), 'INSERT INTO broadcast_recipients (broadcast_id, subscriber_id) SELECT $1, id FROM subscribers WHERE list_id = $2', [broadcast.id, listId]);
  await rawQuery(db(), 'ANALYZE subscribers');
  await rawQuery(db(), 'ANALYZE broadcast_recipients');
  const [row] = await rawQuery<{ after: number }>(db(), 'SELECT max(id) - $2::int AS after FROM subscribers WHERE list_id = $1', [listId, PAGE * 2]);
  const after = row!.after;

  // the page and the rows it fetched from subscribers, counted on its own connection before and after it (the
  // connection's counts not yet reported may hold earlier statements', such as the snapshot's insert above)
  const { page, fetched } = await db().$transaction(async (tx) => {
    const count = async () => {
      const [stats] = await rawQuery<{ fetched: string }>(tx, `SELECT (idx_tup_fetch + seq_tup_read)::text AS fetched FROM pg_stat_xact_user_tables WHERE relname = 'subscribers'`);
      return Number(stats?.fetched ?? 0);
    };
    const before = await count();
    const page = await audiencePage(tx as unknown as Db, broadcast.id, after, PAGE);
    return { page, fetched: (await count()) - before };
  });

  expect(page).toHaveLength(PAGE);
  expect(page[0]!.id).toBe(after + 1);
  expect(page.every((p) => p.due)).toBe(true);
  expect(fetched).toBeLessThan(PAGE * 4);
});
