import type { Tx } from '../db';
import { NotFound } from '../errors';
import { requireAccount } from '../services/accounts';
import { iso } from '../validate';

/**
 * The operator's view of the two "never write to" lists of an account: suppressions (bounced or complained, for lists
 * and sends) and the outreach stop list (addresses and domains). Keyset pages by id; removing an entry lets the
 * address be written to again (the operator's call: a suppression removed by mistake costs the sender's reputation).
 */
export async function listSuppressions(db: Tx, query: { account: number; after?: number; limit: number }) {
  await requireAccount(db, query.account);
  const rows = await db.suppression.findMany({ where: { accountId: query.account, id: query.after ? { gt: query.after } : undefined }, orderBy: { id: 'asc' }, take: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  return {
    suppressions: page.map((s) => ({ id: s.id, account: s.accountId, email: s.email, reason: s.reason, bounce_reason: s.bounceReason, detail: s.detail, created_at: iso(s.createdAt) })),
    next: rows.length > query.limit ? page[page.length - 1]!.id : null,
  };
}

export async function deleteSuppression(db: Tx, id: number): Promise<void> {
  const { count } = await db.suppression.deleteMany({ where: { id } });
  if (!count) throw new NotFound(`no suppression ${id}`);
}

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
