import type { Message } from '../../../../generated/prisma/client';
import type { EmailKind } from '../delivery/kinds';
import { withUnsubscribeUrl } from './copy';

/** A list email's links (unsubscribe, preference centre), for its subscriber; as stored when the subscriber is gone. */
export const subscriberLinks = (stored: string, message: Message): string => (message.subscriberId === null ? stored : withUnsubscribeUrl(stored, message.subscriberId));

/** A broadcast's copy: its subscriber's links put in on the way to the wire (its auto-pause: outreach/email-kind.ts). */
export const broadcastCopies: EmailKind = { kinds: ['broadcast'], links: subscriberLinks };
