import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import type { SubscriberStatus } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { NotFound } from '../errors';
import { iso } from '../validate';
import { campaignView, type CampaignView } from './campaigns';
import { listView, type ListView } from './lists';
import type { MessageSummary } from './messages';

/**
 * Pages of rows for the admin console, by keyset (never OFFSET): a page costs the same on row 10 and row 10 million.
 * Each answer carries `next`, the cursor of the following page, or null on the last one.
 */
export interface Page<T> {
  rows: T[];
  next: string | null;
}

export const PAGE_SIZE = 50;

/** Lists of every account (or one), each with its account and subscriber count. */
export async function browseLists(db: Tx, account?: number): Promise<(ListView & { id: number; account: number })[]> {
  const lists = await db.list.findMany({ where: { accountId: account }, orderBy: { id: 'asc' } });
  return lists.map((l) => ({ id: l.id, account: l.accountId, ...listView(l) }));
}

export async function findList(db: Tx, id: number): Promise<ListView & { id: number; account: number }> {
  const list = await db.list.findUnique({ where: { id } });
  if (!list) throw new NotFound(`no list ${id}`);
  return { id: list.id, account: list.accountId, ...listView(list) };
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
    })),
    next: rows.length > limit ? String(page[page.length - 1]!.id) : null,
  };
}

/** Campaigns of every account, with their prospect counts. */
export async function browseCampaigns(db: Tx): Promise<(CampaignView & { account: number })[]> {
  const campaigns = await db.campaign.findMany({ orderBy: { id: 'asc' }, include: { _count: { select: { prospects: true } } } });
  return campaigns.map((c) => ({ account: c.accountId, ...campaignView(c, c._count.prospects) }));
}

/** A campaign's prospects counted by status and stage. */
export async function prospectCounts(db: Tx, campaignId: number): Promise<{ status: string; stage: number; count: number }[]> {
  const groups = await db.prospect.groupBy({ by: ['status', 'stage'], where: { campaignId }, _count: { _all: true }, orderBy: [{ status: 'asc' }, { stage: 'asc' }] });
  return groups.map((g) => ({ status: g.status, stage: g.stage, count: g._count._all }));
}

export type MessageRow = MessageSummary & { smtp_response: string | null; account: number; bounce: PublicBounce | null };

/** Messages newest first; the cursor is `<created_at ms>_<id>` of the last row shown. */
export async function browseMessages(db: Tx, filter: { to?: string; status?: string; before?: string; limit?: number }): Promise<Page<MessageRow>> {
  const limit = filter.limit ?? PAGE_SIZE;
  const cursor = filter.before ? /^(\d{1,15})_([0-9a-f-]{36})$/.exec(filter.before) : null;
  const at = cursor ? new Date(Number(cursor[1])) : null;
  const rows = await db.message.findMany({
    where: {
      to: filter.to ? filter.to.trim().toLowerCase() : undefined,
      status: filter.status as MessageRow['status'] as never,
      ...(cursor && at ? { OR: [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: cursor[2]! } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    rows: page.map((m) => ({
      id: m.id, account: m.accountId, kind: m.kind, to: m.to, subject: m.subject, status: m.status, attempts: m.attempts,
      last_error: m.lastError, smtp_response: m.smtpResponse, created_at: m.createdAt.toISOString(), sent_at: iso(m.sentAt),
      bounce: publicBounce(m.bounce as unknown as Bounce | null),
    })),
    next: rows.length > limit && last ? `${last.createdAt.getTime()}_${last.id}` : null,
  };
}

