import { config } from '../config';
import { fillMarker, PREFERENCES_URL_MARKER, UNSUBSCRIBE_URL_MARKER } from '../templates/markers';
import { preferencesUrl } from './preferences';
import { signedToken, subscriberOfSigned } from './signed';

/**
 * The unsubscribe token of one subscription (one subscriber row: one address on one list), signed for this purpose
 * (signed.ts).
 */
export const unsubscribeToken = (subscriberId: number): string => signedToken('unsubscribe', subscriberId);

/** The subscriber a token names, or null for anything not made by unsubscribeToken under this SECRET_KEY. */
export const subscriberOfToken = (token: string): number | null => subscriberOfSigned('unsubscribe', token);

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
