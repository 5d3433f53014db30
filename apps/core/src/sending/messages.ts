import type { Tx } from '../db';
import { accountWhere, type AccountScope } from '../account-scope';

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
export async function listMessages(db: Tx, filter: { to?: string; limit: number; account?: AccountScope }): Promise<MessageSummary[]> {
  const rows = await db.message.findMany({
    where: { to: filter.to?.toLowerCase(), ...accountWhere(filter.account) },
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
