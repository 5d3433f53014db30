import { compileEmail, renderEmail } from '../templates/content';
import { PREFERENCES_URL_MARKER } from '../templates/markers';
import { PREFERENCES_LINK_EMAIL } from '../templates/system';

/**
 * The "send me my link" email, rendered by the one renderer (templates/system.ts). The stored body keeps the marker
 * where the link goes; the link is put in on the way to the wire (delivery/compose.ts), so no table holds it.
 */
export function renderPreferencesLinkEmail(listName: string): { subject: string; text: string; html: string } {
  const email = renderEmail(compileEmail(PREFERENCES_LINK_EMAIL), { list_name: listName, link: PREFERENCES_URL_MARKER });
  return { subject: email.subject.slice(0, 300), text: email.text!, html: email.html! };
}
