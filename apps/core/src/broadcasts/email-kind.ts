import type { EmailKind } from '../delivery/kinds';
import { subscriberLinks } from '../subscriber-links';

/** A broadcast's copy: its subscriber's links put in on the way to the wire (its auto-pause: outreach/email-kind.ts). */
export const broadcastCopies: EmailKind = { kinds: ['broadcast'], links: subscriberLinks };
