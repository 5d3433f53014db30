import { broadcastCopies } from '../broadcasts/email-kind';
import type { DeliveryRegistrations } from '../delivery/delivery';
import { EmailKinds, type EmailKind } from '../delivery/kinds';
import { refusalOf } from '../inbound/bounce-policy';
import { seriesSteps } from '../lifecycle/email-kind';
import { oauthLoginOf } from '../oauth/tokens';
import { autoPause, sequenceSteps } from '../outreach/email-kind';
import { preferenceLinks } from '../preferences/email-kind';
import { sendCopies } from '../sending/email-kind';
import { confirmationEmails } from '../subscribers/email-kind';

/** Every kind of email, each registered by the folder that writes it (and auto-pause, which watches two of them). */
export const EMAIL_KINDS: readonly EmailKind[] = [sendCopies, confirmationEmails, broadcastCopies, seriesSteps, preferenceLinks, sequenceSteps, autoPause];

/**
 * The one list of what delivery takes from the domains (docs/DEVELOPERS.md, "Layout"): each kind of email's links,
 * pre-send guard and what follows its end, registered by the folder that writes it, how a mailbox signs in and what a
 * permanent refusal does (inbound's bounce policy). Every
 * process that composes or delivers mail calls this once at start and hands the result down: the worker's main (and the
 * tests that run its processors, through test/helpers/mail.ts), the API's createApp (the operator's message story).
 * A kind left out refuses to start (delivery/kinds.ts). `kinds`: a test's own variation of the list (its guards).
 */
export function deliveryRegistrations(kinds: readonly EmailKind[] = EMAIL_KINDS): DeliveryRegistrations {
  return {
    kinds: new EmailKinds(kinds),
    logins: oauthLoginOf,
    refusals: refusalOf,
  };
}
