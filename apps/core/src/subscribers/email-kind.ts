import type { EmailKind } from '../delivery/kinds';
import { withConfirmationLink } from './confirm-link';
import { confirmationRefusal } from './guard';

/** A double opt-in's confirmation email: its link put in on the way to the wire, and sent only while the person is pending. */
export const confirmationEmails: EmailKind = {
  kinds: ['confirmation'],
  links: (stored, message) => withConfirmationLink(stored, message.id)!,
  guard: confirmationRefusal,
};
