import { subscriberLinks } from '../subscriber-links';
import type { EmailKind } from '../delivery/kinds';

/** The preference centre's "send me my link" email: its subscriber's links put in on the way to the wire. */
export const preferenceLinks: EmailKind = { kinds: ['preferences'], links: subscriberLinks };
