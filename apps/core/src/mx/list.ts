import type { Tx } from '../db';
import { BadRequest } from '../errors';
import { receivedEvent, type InboundReceived } from './message';

/**
 * GET /api/v1/inbound?source=mx and MCP list_inbound (docs/mx.md): the messages the MX delivered to the account as
 * `inbound.received`, in the order they were delivered (taken, or released), after the id `after`, each as its event's data (fresh signed URLs), with `next` (the
 * last id, or null when the page was the last). Held and dropped messages are not the customer's until released.
 */
export async function listDeliveredMx(db: Tx, accountId: number, query: { after?: string; limit: number }): Promise<{ messages: InboundReceived[]; next: string | null }> {
  let from: { deliveredAt: Date; id: string } | undefined;
  if (query.after) {
    const row = await db.mxMessage.findFirst({ where: { id: query.after, accountId, status: 'delivered' }, select: { deliveredAt: true, id: true } });
    if (!row?.deliveredAt) throw new BadRequest(`after: no inbound message ${query.after} in this account`);
    from = { deliveredAt: row.deliveredAt, id: row.id };
  }
  const rows = await db.mxMessage.findMany({
    where: {
      accountId,
      status: 'delivered',
      ...(from ? { OR: [{ deliveredAt: { gt: from.deliveredAt } }, { deliveredAt: from.deliveredAt, id: { gt: from.id } }] } : {}),
    },
    orderBy: [{ deliveredAt: 'asc' }, { id: 'asc' }],
    take: query.limit,
  });
  const messages: InboundReceived[] = [];
  // one at a time: each parse holds a message's bytes
  for (const row of rows) messages.push(await receivedEvent(row));
  return { messages, next: rows.length === query.limit ? rows[rows.length - 1]!.id : null };
}
