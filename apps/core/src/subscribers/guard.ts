import type { Message } from '../../../../generated/prisma/client';
import type { Tx } from '../db';

/**
 * The last check before a confirmation email goes out: the person must still be pending. One who unsubscribed,
 * bounced, complained or was confirmed through the API after the email was written gets nothing.
 */
export async function confirmationRefusal(tx: Tx, message: Message): Promise<string | null> {
  if (message.subscriberId === null) return null;
  const subscriber = await tx.subscriber.findUnique({ where: { id: message.subscriberId }, select: { status: true } });
  if (!subscriber) return 'the subscriber was deleted';
  return subscriber.status === 'pending' ? null : `the subscriber is ${subscriber.status}`;
}

