import type { Db } from '../db';

export interface InboundView {
  id: number;
  mailbox: number;
  from: string;
  subject: string;
  kind: string;
  /** for a bounce: the reason read from the report (docs/inbound.md) */
  reason: string | null;
  message_id: string | null;
  prospect_id: number | null;
  received_at: Date;
}

/** The handled emails, newest first, of one mailbox or all. */
export async function listInbound(db: Db, query: { mailbox?: number; limit: number }): Promise<InboundView[]> {
  const rows = await db.inboundMessage.findMany({
    where: query.mailbox ? { mailboxId: query.mailbox } : {},
    orderBy: { id: 'desc' },
    take: query.limit,
  });
  return rows.map((r) => ({
    id: r.id,
    mailbox: r.mailboxId,
    from: r.fromAddress,
    subject: r.subject,
    kind: r.kind,
    reason: r.reason,
    message_id: r.messageId,
    prospect_id: r.prospectId,
    received_at: r.receivedAt,
  }));
}
