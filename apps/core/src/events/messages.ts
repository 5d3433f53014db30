import { rawQuery, type Tx } from '../db';
import { subscribed } from './index';

/**
 * The `data` of a message event, as one SQL expression over a messages row `m` and its Send `s` (LEFT JOIN): id, send
 * id, to, subject, status, the SMTP answer, the Send's metadata and the bounce (docs/inbound.md) when there is one. The worker's batched "sent" mark puts it in its own
 * statement (fast-claim.ts), the other outcomes through emitMessageEvent: one copy of the shape for both.
 */
export const MESSAGE_EVENT_DATA = `jsonb_build_object(
  'id', m.id, 'send_id', m.send_id, 'kind', m.kind, 'to', m."to", 'subject', m.subject, 'status', m.status,
  'smtp_response', COALESCE(m.smtp_response, ''), 'error', COALESCE(m.last_error, ''), 'metadata', COALESCE(s.metadata, '{}'::jsonb),
  'bounce', m.bounce - 'at')`;

export type MessageEventType = 'message.sent' | 'message.failed' | 'message.bounced';

/** The event of a message's final status, read from the row as the transaction just wrote it. Call it inside that transaction. */
export async function emitMessageEvent(tx: Tx, messageId: string, type: MessageEventType): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data)
     SELECT m.account_id, $2, ${MESSAGE_EVENT_DATA} FROM messages m LEFT JOIN sends s ON s.id = m.send_id
     WHERE m.id = $1::uuid AND ${subscribed('m.account_id', '$2')}`,
    [messageId, type],
  );
}
