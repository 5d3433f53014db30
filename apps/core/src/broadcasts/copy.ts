import crypto from 'node:crypto';
import { config } from '../config';
import { renderSubject, renderTemplate, type TemplateContext } from '../outreach/render';
import { fillMarker, PREFERENCES_URL_MARKER, UNSUBSCRIBE_URL_MARKER } from '../templates/markers';
import { preferencesUrl } from '../subscribers/preferences-token';

/**
 * The unsubscribe token of one subscription (one subscriber row: one address on one list): `<subscriber id>.<HMAC>`,
 * the HMAC-SHA256 of the id under SECRET_KEY (192 bits kept, base64url). Nothing is stored: the link is derived again
 * when it is checked, so it is unguessable without the key and never expires. Rotating SECRET_KEY voids old links.
 */
function mac(subscriberId: number): string {
  return crypto.createHmac('sha256', config().secretKey).update(`unsubscribe:${subscriberId}`).digest('base64url').slice(0, 32);
}

export function unsubscribeToken(subscriberId: number): string {
  return `${subscriberId}.${mac(subscriberId)}`;
}

/** The subscriber a token names, or null for anything not made by unsubscribeToken under this SECRET_KEY. */
export function subscriberOfToken(token: string): number | null {
  const match = /^([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const id = Number(match[1]);
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) return null;
  const expected = Buffer.from(mac(id));
  const given = Buffer.from(match[2]!);
  return crypto.timingSafeEqual(expected, given) ? id : null;
}

export const unsubscribeUrl = (subscriberId: number) => `${config().publicUrl}/u/${unsubscribeToken(subscriberId)}`;

/**
 * A copy is stored with this placeholder where its unsubscribe link goes (bodies and List-Unsubscribe), and the link is
 * put in when the email is composed for the wire (delivery/compose.ts): the messages table holds no usable token.
 */
export const UNSUBSCRIBE_URL_PLACEHOLDER = UNSUBSCRIBE_URL_MARKER;

/** A stored copy's body or header with the subscriber's real links (unsubscribe, preference centre) in place of the placeholders. */
export function withUnsubscribeUrl<T extends string | null>(stored: T, subscriberId: number): T {
  const unsubscribe = fillMarker(stored, UNSUBSCRIBE_URL_MARKER, () => unsubscribeUrl(subscriberId));
  return fillMarker(unsubscribe, PREFERENCES_URL_MARKER, () => preferencesUrl(subscriberId));
}

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
 * which stays UNSUBSCRIBE_URL_PLACEHOLDER until the wire, and the RFC 8058 / RFC 2919 headers. A text part for
 * html-only content is made at delivery (composeMail), from the rendered html.
 */
export function renderCopy(content: BroadcastContent, recipient: Recipient, listIdHeader: string, topics: string[] = []) {
  const url = UNSUBSCRIBE_URL_PLACEHOLDER;
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
