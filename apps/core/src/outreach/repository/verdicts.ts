/** What counts as a dead bounce and a complaint: the stats (stats.ts), the auto-pause windows (windows.ts) and rotation. */

/**
 * SQL over a messages row: is it a dead-address bounce? The bounce reader's verdict on it (`messages.bounce`, its reason
 * userunknown, hostunknown, hasmoved or notaccept: docs/inbound.md), from a report or the SMTP answer at delivery; a
 * row bounced before bounces carried their reason counts by its status. The one place that says so.
 */
export function isDeadBounce(m: string): string {
  return `COALESCE((${m}.bounce->>'dead')::boolean, ${m}.status = 'bounced')`;
}

/** SQL over a messages row: did its recipient complain about it (an ARF report matched to it: docs/inbound.md)? */
export function isComplaint(m: string): string {
  return `EXISTS (SELECT 1 FROM inbound_messages i WHERE i.related_id = ${m}.id AND i.kind = 'complaint')`;
}
