import type { Tx } from '../db';
import { emitEvent } from './index';

const TYPE = {
  pending: 'subscriber.pending',
  active: 'subscriber.confirmed',
  unsubscribed: 'subscriber.unsubscribed',
} as const;

/**
 * The event of a subscriber's move into pending, active (`subscriber.confirmed`: by the link, or added active) or
 * unsubscribed. Data: list key, email, status. Call it in the transaction that wrote the move.
 */
export async function emitSubscriberChange(
  tx: Tx,
  list: { key: string; accountId: number },
  email: string,
  status: keyof typeof TYPE,
): Promise<void> {
  await emitEvent(tx, list.accountId, TYPE[status], { list: list.key, email, status });
}
