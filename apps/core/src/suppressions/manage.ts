import { accountWhere, type AccountScope } from '../account-scope';
import { audited, type AuditContext } from '../audit';
import type { Db, Tx } from '../db';
import { NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { csvCell } from '../subscribers/csv';
import { iso } from '../validate';

/**
 * The suppressions page's work (docs/operator.md): find why and since when an address gets no mail (a bounce, a
 * complaint, a hand-added entry: the account's suppression list; an unsubscribe: a list's own subscription), add an
 * address by hand, remove one with the reason said (both written to the audit log with the change), export them all.
 */
export interface SuppressionFilter {
  /** one account, or several (a person's in the console: docs/teams.md); every account when not said */
  account?: AccountScope;
  /** part of the address, any case */
  q?: string;
  reason?: 'bounced' | 'complained' | 'manual' | 'unsubscribed';
  limit: number;
}

export interface SuppressionRow {
  /** the suppression's id; null for an unsubscribe (a subscription, not an entry of the suppression list) */
  id: number | null;
  account: number;
  email: string;
  reason: 'bounced' | 'complained' | 'manual' | 'unsubscribed';
  detail: string;
  bounce_reason: string | null;
  /** the list an unsubscribe left */
  list: { id: number; name: string } | null;
  at: Date | null;
}

/** The suppression list and the unsubscribes, newest first, up to `limit` of each matching. */
export async function findSuppressions(db: Tx, f: SuppressionFilter): Promise<SuppressionRow[]> {
  const email = f.q ? { contains: f.q.toLowerCase() } : undefined;
  const listed =
    f.reason === 'unsubscribed'
      ? []
      : await db.suppression.findMany({ where: { ...accountWhere(f.account), email, reason: f.reason }, orderBy: { id: 'desc' }, take: f.limit });
  const left =
    f.reason && f.reason !== 'unsubscribed'
      ? []
      : await db.subscriber.findMany({
          where: { status: 'unsubscribed', email, list: f.account === undefined ? undefined : accountWhere(f.account) },
          include: { list: { select: { id: true, name: true, accountId: true } } },
          orderBy: { id: 'desc' },
          take: f.limit,
        });
  const rows: SuppressionRow[] = [
    ...listed.map((s) => ({ id: s.id, account: s.accountId, email: s.email, reason: s.reason, detail: s.detail, bounce_reason: s.bounceReason, list: null, at: s.createdAt })),
    ...left.map((s) => ({ id: null, account: s.list.accountId, email: s.email, reason: 'unsubscribed' as const, detail: '', bounce_reason: null, list: { id: s.list.id, name: s.list.name }, at: s.unsubscribedAt ?? s.updatedAt })),
  ];
  return rows.sort((a, b) => (b.at?.getTime() ?? 0) - (a.at?.getTime() ?? 0)).slice(0, f.limit);
}

const view = (s: { id: number; accountId: number; email: string; reason: string; detail: string; createdAt: Date }) => ({ id: s.id, account: s.accountId, email: s.email, reason: s.reason, detail: s.detail, created_at: iso(s.createdAt) });

/** Puts an address on the account's suppression list by hand (`manual`, with the reason given); an address already on it stays as it was. */
export async function suppressByHand(db: Db, input: { account: number; email: string; detail: string }, audit: AuditContext): Promise<{ added: boolean }> {
  const email = input.email.trim().toLowerCase();
  await requireAccount(db, input.account);
  const found = await db.suppression.findUnique({ where: { accountId_email: { accountId: input.account, email } } });
  if (found) return { added: false };
  await audited(db, audit, { action: 'create', resource: 'suppression', after: (row) => view(row as Parameters<typeof view>[0]) }, (tx) =>
    tx.suppression.create({ data: { accountId: input.account, email, reason: 'manual', detail: input.detail } }),
  );
  return { added: true };
}

/** Takes an address off the suppression list: mail may reach it again. The reason is kept in the audit entry. */
export async function removeSuppression(db: Db, id: number, reason: string, audit: AuditContext): Promise<{ email: string; account: number }> {
  const change = { action: 'delete', resource: 'suppression', id, after: () => ({ removed_because: reason }), account: (row: { account: number }) => row.account };
  return audited(db, audit, { ...change, before: async (tx) => view(await found(tx, id)) }, async (tx) => {
    const row = await tx.suppression.delete({ where: { id: (await found(tx, id)).id } });
    return { email: row.email, account: row.accountId };
  });
}

async function found(tx: Tx, id: number) {
  const row = await tx.suppression.findUnique({ where: { id } });
  if (!row) throw new NotFound(`no suppression ${id}`);
  return row;
}


/** Every entry of the suppression list (of one account, the scope's, or all), as CSV (subscribers/csv.ts quoting), by keyset pages of 1,000. */
export async function* suppressionsCsv(db: Tx, account?: AccountScope): AsyncGenerator<string> {
  yield 'account,email,reason,bounce_reason,detail,created_at\r\n';
  let after = 0;
  for (;;) {
    const rows = await db.suppression.findMany({ where: { ...accountWhere(account), id: { gt: after } }, orderBy: { id: 'asc' }, take: 1000 });
    if (!rows.length) return;
    yield rows.map((s) => [String(s.accountId), s.email, s.reason, s.bounceReason ?? '', s.detail, s.createdAt.toISOString()].map(csvCell).join(',') + '\r\n').join('');
    after = rows[rows.length - 1]!.id;
  }
}
