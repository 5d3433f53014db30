import type { SubscriberStatus } from '../../../../generated/prisma/client';
import { accountWhere, type AccountScope } from '../account-scope';
import type { Tx } from '../db';
import { PAGE_SIZE, type Page } from '../keyset';
import { iso } from '../validate';
import { listView, type ListView } from './lists';

/** Lists of every account (or of the scope's), each with its account and subscriber count. */
export async function browseLists(db: Tx, account?: AccountScope): Promise<(ListView & { id: number; account: number })[]> {
  const lists = await db.list.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return lists.map((l) => ({ id: l.id, account: l.accountId, ...listView(l) }));
}

export interface SubscriberRow {
  id: number;
  email: string;
  name: string;
  status: string;
  tags: string[];
  fields: Record<string, unknown>;
  /** where the consent came from and when it was given (the import's consent_source and consent_at) */
  consent_source: string;
  consent_at: string | null;
  created_at: string;
  confirmed_at: string | null;
  /** the last address verification asked for this person (docs/verification.md); null when never */
  verification: { result: string; checked_at: string } | null;
}

/** A list's subscribers by id; `search` matches the address or name (case-insensitive), `status` filters. */
export async function browseSubscribers(
  db: Tx,
  listId: number,
  filter: { search?: string; status?: SubscriberStatus; after?: number; limit?: number },
): Promise<Page<SubscriberRow>> {
  const limit = filter.limit ?? PAGE_SIZE;
  const rows = await db.subscriber.findMany({
    where: {
      listId,
      status: filter.status,
      id: filter.after ? { gt: filter.after } : undefined,
      ...(filter.search
        ? { OR: [{ email: { contains: filter.search, mode: 'insensitive' } }, { name: { contains: filter.search, mode: 'insensitive' } }] }
        : {}),
    },
    orderBy: { id: 'asc' },
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  return {
    rows: page.map((s) => ({
      id: s.id,
      email: s.email,
      name: s.name,
      status: s.status,
      tags: s.tags,
      fields: (s.fields ?? {}) as Record<string, unknown>,
      consent_source: s.consentSource,
      consent_at: iso(s.consentAt),
      created_at: s.createdAt.toISOString(),
      confirmed_at: iso(s.confirmedAt),
      verification: s.verificationResult && s.verificationCheckedAt ? { result: s.verificationResult, checked_at: s.verificationCheckedAt.toISOString() } : null,
    })),
    next: rows.length > limit ? String(page[page.length - 1]!.id) : null,
  };
}
