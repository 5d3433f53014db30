import type { Tx } from '../db';
import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import { PAGE_SIZE, type Page } from '../keyset';
import { iso } from '../validate';

export interface MessageSummary {
  id: string;
  kind: string;
  to: string;
  subject: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

/** Newest first, for the admin API and the CLI. */
export async function listMessages(db: Tx, filter: { to?: string; limit: number; account?: number }): Promise<MessageSummary[]> {
  const rows = await db.message.findMany({
    where: { to: filter.to?.toLowerCase(), accountId: filter.account },
    orderBy: { createdAt: 'desc' },
    take: filter.limit,
  });
  return rows.map((m) => ({
    id: m.id,
    kind: m.kind,
    to: m.to,
    subject: m.subject,
    status: m.status,
    attempts: m.attempts,
    last_error: m.lastError,
    created_at: m.createdAt.toISOString(),
    sent_at: m.sentAt?.toISOString() ?? null,
  }));
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
