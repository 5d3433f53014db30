import type { Message } from '../../../../generated/prisma/client';
import { withUnsubscribeUrl } from './unsubscribe';

/**
 * A list email's links (unsubscribe, preference centre) for its subscriber, put in on the way to the wire by the kinds
 * that write to subscribers (broadcasts, the welcome series, preference mail: each folder's email-kind.ts); as stored
 * when the subscriber is gone.
 */
export const subscriberLinks = (stored: string, message: Message): string => (message.subscriberId === null ? stored : withUnsubscribeUrl(stored, message.subscriberId));
