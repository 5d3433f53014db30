import crypto from 'node:crypto';
import { config } from '../config';

/**
 * A subscription's signed token for one purpose (unsubscribe, preferences): `<subscriber id>.<HMAC>`, the HMAC-SHA256 of
 * `<purpose>:<id>` under SECRET_KEY (192 bits kept, base64url), so a token of one purpose is not one of another. Nothing
 * is stored: the token is derived again when it is checked, so it is unguessable without the key and never expires.
 * Rotating SECRET_KEY voids old links.
 */
type Purpose = 'unsubscribe' | 'preferences';

function mac(purpose: Purpose, subscriberId: number): string {
  return crypto.createHmac('sha256', config().secretKey).update(`${purpose}:${subscriberId}`).digest('base64url').slice(0, 32);
}

export const signedToken = (purpose: Purpose, subscriberId: number): string => `${subscriberId}.${mac(purpose, subscriberId)}`;

/** The subscriber a token of `purpose` names, or null for anything not made by signedToken under this SECRET_KEY. */
export function subscriberOfSigned(purpose: Purpose, token: string): number | null {
  const match = /^([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const id = Number(match[1]);
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) return null;
  return crypto.timingSafeEqual(Buffer.from(mac(purpose, id)), Buffer.from(match[2]!)) ? id : null;
}
