import { holdsMarkup } from '../templates/markers';
import crypto from 'node:crypto';
import { config } from '../config';
import type { Db } from '../db';
import { insertClick, upsertOpen } from './repository';

export { broadcastLinks } from './repository';

/**
 * Opt-in click and open tracking (docs/analytics.md). A tracked link is PUBLIC_URL/c/<token>, the token naming the
 * message and the original address and signed with SECRET_KEY (HMAC-SHA256): the service redirects only to an address
 * it put in an email itself, never to one a stranger wrote into a URL. An open is a 1x1 image at PUBLIC_URL/o/<token>.
 */

/** A link scanner of a mail filter fetches the links as soon as the email arrives: a GET this soon is not a person. */
export const SCANNER_WINDOW_MS = 2_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const idBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex').toString('base64url');
function idOf(part: string): string | null {
  const hex = Buffer.from(part, 'base64url').toString('hex');
  if (hex.length !== 32) return null;
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return UUID.test(id) && idBytes(id) === part ? id : null;
}

const sign = (what: string) => crypto.createHmac('sha256', config().secretKey).update(what).digest('base64url').slice(0, 22);

function signed(given: string, what: string): boolean {
  const expected = Buffer.from(sign(what));
  const actual = Buffer.from(given);
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

const isWebUrl = (url: string) => {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
};

/** `<message id>.<address>.<signature>`, each part base64url. */
export function clickToken(messageId: string, url: string): string {
  return `${idBytes(messageId)}.${Buffer.from(url).toString('base64url')}.${sign(`click:${messageId}:${url}`)}`;
}

/** The message and address a click token names; null for anything this service did not sign (or an altered one). */
export function readClickToken(token: string): { messageId: string; url: string } | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return null;
  const messageId = idOf(parts[0]!);
  if (!messageId) return null;
  const url = Buffer.from(parts[1]!, 'base64url').toString('utf8');
  if (Buffer.from(url).toString('base64url') !== parts[1] || !isWebUrl(url)) return null;
  return signed(parts[2]!, `click:${messageId}:${url}`) ? { messageId, url } : null;
}

export function openToken(messageId: string): string {
  return `${idBytes(messageId)}.${sign(`open:${messageId}`)}`;
}

export function readOpenToken(token: string): string | null {
  const parts = token.replace(/\.gif$/, '').split('.');
  if (parts.length !== 2 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return null;
  const messageId = idOf(parts[0]!);
  return messageId && signed(parts[1]!, `open:${messageId}`) ? messageId : null;
}

const clickUrl = (base: string, messageId: string, url: string) => `${base}/c/${clickToken(messageId, url)}`;

const ENTITY = /&(amp|#38|#x26);/gi;

/** Does this address stay as it is? The service's own links (unsubscribe, confirmation) and placeholders do. */
function ownLink(url: string, base: string): boolean {
  return url.startsWith(`${config().publicUrl}/`) || url.startsWith(`${base}/`) || holdsMarkup(url);
}

/**
 * Every http(s) link of an html body (`<a href>`) through the message's click tokens, at `base`: PUBLIC_URL, or the
 * account's live tracking domain (tracking-domains/links.ts).
 */
export function trackHtmlLinks(html: string, messageId: string, base = config().publicUrl): string {
  return html.replace(/(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"'\s<>]+)\2/gi, (whole, head: string, quote: string, href: string) => {
    const url = href.replace(ENTITY, '&');
    if (ownLink(url, base) || !isWebUrl(url)) return whole;
    return `${head}${quote}${clickUrl(base, messageId, url)}${quote}`;
  });
}

/** Every http(s) address of a plain-text body through the message's click tokens (sequence emails are text). */
export function trackTextLinks(text: string, messageId: string, base = config().publicUrl): string {
  return text.replace(/https?:\/\/[^\s<>"')\]]+[^\s<>"')\].,;:!?]/gi, (url) => (ownLink(url, base) || !isWebUrl(url) ? url : clickUrl(base, messageId, url)));
}

/** The html body with the open image at its end (inside </body> when there is one). */
export function withOpenPixel(html: string, messageId: string, base = config().publicUrl): string {
  const img = `<img src="${base}/o/${openToken(messageId)}.gif" width="1" height="1" alt="" border="0">`;
  return /<\/body>/i.test(html) ? html.replace(/<\/body>/i, `${img}</body>`) : html + img;
}

/**
 * The tracking a broadcast or campaign asked for, applied to one email's templates before the recipient's fields are
 * merged: only the links the sender wrote are signed, never an address a recipient typed into a field.
 */
export function tracked(
  body: { html: string | null; text: string | null },
  messageId: string,
  options: { clicks: boolean; opens: boolean; base?: string },
): { html: string | null; text: string | null } {
  let { html, text } = body;
  const base = options.base ?? config().publicUrl;
  if (options.clicks) {
    if (html !== null) html = trackHtmlLinks(html, messageId, base);
    // a text part beside an html one is tracked too; alone, it is a sequence email's body
    if (text !== null) text = trackTextLinks(text, messageId, base);
  }
  if (options.opens && html !== null) html = withOpenPixel(html, messageId, base);
  return { html, text };
}

/**
 * A request of a tracked link, in one statement: the click row of the email and link counted up (a scanner's when it
 * is a HEAD, or a GET within SCANNER_WINDOW_MS of delivery or before it), and for a person's first click of that link
 * from that email (its unique click) the `clicked` counter and the `message.clicked` event. A replayed link is
 * redirected every time and counted once. A message gone (retention) is redirected without a record.
 */
export async function recordClick(db: Db, click: { messageId: string; url: string; head: boolean }): Promise<{ scanner: boolean; first: boolean } | null> {
  return insertClick(db, click, SCANNER_WINDOW_MS);
}

/** An open of a tracked email, in one statement: the first counts (`opened`, `message.opened`), later ones are noted. */
export async function recordOpen(db: Db, messageId: string): Promise<void> {
  await upsertOpen(db, messageId);
}
