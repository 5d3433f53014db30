import { config } from '../config';
import { PREFERENCES_URL_MARKER, UNSUBSCRIBE_URL_MARKER } from './markers';
import { renderSubject, renderTemplate, type TemplateContext } from './render';

// A list's email to one subscriber (a broadcast's copy, a welcome series' step): one function renders both, so a copy
// and a series step read alike (docs/broadcasts.md, docs/lists.md).

export interface BroadcastContent {
  subject: string;
  html: string | null;
  text: string | null;
}

export interface Recipient {
  id: number;
  email: string;
  name: string;
  fields: unknown;
}

/** `List-Id: "Name" <key.domain>` (RFC 2919): the list's key under the sending mailbox's domain. */
export function listId(list: { key: string; name: string }, mailboxAddress: string): string {
  const domain = mailboxAddress.split('@')[1] || 'localhost';
  // the list's name as the phrase when it is plain ASCII (the header is written as is: see renderCopy)
  const label = /^[\x20-\x7e]*$/.test(list.name) ? list.name.replace(/["\\]/g, '').trim() : '';
  const id = `${list.key.toLowerCase().replace(/[^a-z0-9-]/g, '-')}.${domain}`;
  return label ? `"${label}" <${id}>` : `<${id}>`;
}

/**
 * One subscriber's copy as stored: placeholders filled (values HTML-escaped in the html body) but the unsubscribe link,
 * which stays UNSUBSCRIBE_URL_MARKER until the wire, and the RFC 8058 / RFC 2919 headers. A text part for
 * html-only content is made at delivery (composeMail), from the rendered html.
 */
export function renderCopy(content: BroadcastContent, recipient: Recipient, listIdHeader: string, topics: string[] = []) {
  const url = UNSUBSCRIBE_URL_MARKER;
  const ctx: TemplateContext = { name: recipient.name, email: recipient.email, unsubscribe_url: url, preferences_url: PREFERENCES_URL_MARKER, fields: recipient.fields };
  // an email of topics: one-click leaves those topics only (docs/preferences.md); the ids are URL-safe (topics/index.ts)
  const oneClick = topics.length ? `${url}/t/${topics.join(',')}` : url;
  return {
    subject: renderSubject(content.subject, ctx),
    html: content.html === null ? null : withPreferencesFooter(renderTemplate(content.html, ctx, 'html'), 'html'),
    text: content.text === null ? null : withPreferencesFooter(renderTemplate(content.text, ctx), 'text'),
    // `prepared`: written on the wire exactly so (nodemailer would otherwise MIME-encode `<` and `"`), all ASCII
    headers: {
      'List-Unsubscribe': { prepared: true, value: `<${oneClick}>` },
      'List-Unsubscribe-Post': { prepared: true, value: 'List-Unsubscribe=One-Click' },
      'List-Id': { prepared: true, value: listIdHeader },
    },
  };
}

/**
 * Every list email links its reader's preference centre (docs/preferences.md): a body that does not place
 * `{{ preferences_url }}` itself gets a short footer with it (in an html body, before `</body>` when there is one).
 */
export function withPreferencesFooter(body: string, part: 'html' | 'text'): string {
  if (body.includes(PREFERENCES_URL_MARKER)) return body;
  if (part === 'text') return `${body}\n\n--\nChoose what you receive, pause or leave: ${PREFERENCES_URL_MARKER}\n`;
  const footer = `<p style="font-size:12px;color:#666"><a href="${PREFERENCES_URL_MARKER}">Choose what you receive, pause or leave</a></p>`;
  const end = body.search(/<\/body>/i);
  return end === -1 ? `${body}\n${footer}` : `${body.slice(0, end)}${footer}\n${body.slice(end)}`;
}

/**
 * What a copy looks like, for the console's preview: rendered for a sample reader, with a placeholder where each
 * copy's own unsubscribe link goes (a real one would be a working link of somebody's subscription).
 */
export function previewCopy(content: BroadcastContent, sample: Omit<Recipient, 'id'> = { email: 'reader@example.com', name: 'Reader', fields: {} }) {
  const ctx: TemplateContext = { name: sample.name, email: sample.email, unsubscribe_url: `${config().publicUrl}/u/(each-copy-has-its-own)`, fields: sample.fields };
  return {
    subject: renderSubject(content.subject, ctx),
    html: content.html === null ? null : renderTemplate(content.html, ctx, 'html'),
    text: content.text === null ? null : renderTemplate(content.text, ctx),
  };
}
