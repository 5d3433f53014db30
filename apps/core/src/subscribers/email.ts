import { compileEmail, renderEmail } from '../templates/content';
import { CONFIRMATION_EMAIL } from '../templates/system';

export interface ConfirmationEmail {
  subject: string;
  text: string;
  html: string;
}

/** A name fit for the greeting: short, one line, letters only (no links, no addresses, no punctuation to build them). */
const PLAIN_NAME = /^[\p{L}\p{M}' -]{1,40}$/u;

/**
 * The double opt-in email: the list's name, the link and what happens when it is ignored, rendered by the one renderer
 * (templates/system.ts). The name (typed by whoever typed the address) greets only when it is a plain short name: the
 * form cannot carry a message to any address.
 */
export function renderConfirmationEmail(input: { listName: string; name: string; link: string }): ConfirmationEmail {
  const name = input.name.trim();
  const greeting = PLAIN_NAME.test(name) ? `Hello ${name},` : 'Hello,';
  const email = renderEmail(compileEmail(CONFIRMATION_EMAIL), { greeting, list_name: input.listName, link: input.link });
  return { subject: email.subject.slice(0, 300), text: email.text!, html: email.html! };
}
