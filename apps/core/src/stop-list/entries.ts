import type { Tx } from '../db';
import { NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { iso } from '../validate';

/**
 * The operator's view of an account's outreach stop list (addresses and domains): keyset pages by id; removing an entry
 * lets the address be written to again.
 */
export async function listStopEntries(db: Tx, query: { account: number; after?: number; limit: number }) {
  await requireAccount(db, query.account);
  const rows = await db.stopEntry.findMany({ where: { accountId: query.account, id: query.after ? { gt: query.after } : undefined }, orderBy: { id: 'asc' }, take: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  return {
    entries: page.map((e) => ({ id: e.id, account: e.accountId, kind: e.kind, value: e.value, created_at: iso(e.createdAt) })),
    next: rows.length > query.limit ? page[page.length - 1]!.id : null,
  };
}

export async function deleteStopEntry(db: Tx, id: number): Promise<void> {
  const { count } = await db.stopEntry.deleteMany({ where: { id } });
  if (!count) throw new NotFound(`no stop-list entry ${id}`);
}
