import type { Tx } from '../db';
import { NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { iso } from '../validate';

/**
 * The operator's view of an account's suppressions (bounced or complained addresses, for lists and sends): keyset pages
 * by id; removing one lets the address be written to again (the operator's call: a suppression removed by mistake costs
 * the sender's reputation).
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
