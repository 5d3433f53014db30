import type { Db } from '../db';
import { accountWhere, type AccountScope } from '../account-scope';

export interface InboundView {
  id: number;
  mailbox: number;
  from: string;
  subject: string;
  kind: string;
  /** for a bounce: the reason read from the report (docs/inbound.md) */
  reason: string | null;
  /** a bounce or complaint that proved no message of ours: why it was not applied (docs/inbound.md) */
  unmatched: string | null;
  message_id: string | null;
  prospect_id: number | null;
  received_at: Date;
}

/** The handled emails, newest first, of one mailbox or all; `unmatched`: only the reports that proved nothing, or only the others. */
export async function listInbound(db: Db, query: { mailbox?: number; unmatched?: boolean; limit: number; account?: AccountScope }): Promise<InboundView[]> {
  const rows = await db.inboundMessage.findMany({
    where: { ...(query.mailbox ? { mailboxId: query.mailbox } : {}), ...(query.account !== undefined ? { mailbox: accountWhere(query.account) } : {}), ...(query.unmatched !== undefined ? { unmatched: query.unmatched ? { not: null } : null } : {}) },
    orderBy: { id: 'desc' },
    take: query.limit,
  });
  return rows.map((r) => ({
    id: Number(r.id),
    mailbox: r.mailboxId,
    from: r.fromAddress,
    subject: r.subject,
    kind: r.kind,
    reason: r.reason,
    unmatched: r.unmatched,
    message_id: r.messageId,
    prospect_id: r.prospectId,
    received_at: r.receivedAt,
  }));
}
