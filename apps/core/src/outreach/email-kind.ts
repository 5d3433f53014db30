import type { EmailKind } from '../delivery/kinds';
import { autoPauseAfter, judgeWatchedWindows } from './auto-pause';
import { sequenceRefusal } from './guard';
import { withProspectUnsubscribeUrl } from './opt-out';

/** A campaign's step: its prospect's opt-out link put in on the way to the wire, and sent only while the prospect may get it. */
export const sequenceSteps: EmailKind = {
  kinds: ['sequence'],
  links: (stored, message) => (message.prospectId === null ? stored : withProspectUnsubscribeUrl(stored, message.prospectId)),
  guard: sequenceRefusal,
};

/**
 * Auto-pause (docs/outreach.md) watches the ends of a campaign's steps and of a broadcast's copies: a bounce or a failure
 * for good is judged in the transaction that records it, and a watched window again after each "sent" mark.
 */
export const autoPause: EmailKind = { kinds: ['sequence', 'broadcast'], undelivered: autoPauseAfter, windowsEnded: judgeWatchedWindows };
