import type { Message } from '../../../../generated/prisma/client';
import type { Tx } from '../db';

/**
 * The last check before a series step goes out: the person must still be active on the list. One who unsubscribed,
 * bounced, complained or was deleted after the step was written gets nothing.
 */
export async function seriesRefusal(tx: Tx, message: Message): Promise<string | null> {
  if (message.subscriberId === null) return 'the subscriber was deleted';
  const subscriber = await tx.subscriber.findUnique({ where: { id: message.subscriberId }, select: { status: true } });
  if (!subscriber) return 'the subscriber was deleted';
  return subscriber.status === 'active' ? null : `the subscriber is ${subscriber.status}`;
}
