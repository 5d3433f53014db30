import crypto from 'node:crypto';
import { config } from '../config';
import { fillMarker, PREFERENCES_URL_MARKER, UNSUBSCRIBE_URL_MARKER } from '../templates/markers';
import { preferencesUrl } from './preferences';

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
 * A stored copy's body or header with the subscriber's real links (unsubscribe, preference centre) in place of the
 * markers it was stored with (templates/list-copy.ts): put in when the email is composed for the wire, so the messages
 * table holds no usable token.
 */
export function withUnsubscribeUrl<T extends string | null>(stored: T, subscriberId: number): T {
  const unsubscribe = fillMarker(stored, UNSUBSCRIBE_URL_MARKER, () => unsubscribeUrl(subscriberId));
  return fillMarker(unsubscribe, PREFERENCES_URL_MARKER, () => preferencesUrl(subscriberId));
}
