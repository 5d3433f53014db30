import type { Tx } from '../db';
import { insertMessageEvent } from './repository';

export type MessageEventType = 'message.sent' | 'message.failed' | 'message.bounced' | 'message.cancelled';

/** The event of a message's final status, read from the row as the transaction just wrote it. Call it inside that transaction. */
export async function emitMessageEvent(tx: Tx, messageId: string, type: MessageEventType): Promise<void> {
  await insertMessageEvent(tx, messageId, type);
}
