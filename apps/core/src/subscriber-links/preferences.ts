import crypto from 'node:crypto';
import { config } from '../config';

/**
 * The preference centre's link of one subscription: `<subscriber id>.<HMAC>`, the HMAC-SHA256 of the id under
 * SECRET_KEY for this purpose (192 bits kept, base64url), so an unsubscribe token is not a preference token and the
 * reverse. Nothing is stored; an altered token, or one of another subscriber with this one's id, does not verify.
 */
function mac(subscriberId: number): string {
  return crypto.createHmac('sha256', config().secretKey).update(`preferences:${subscriberId}`).digest('base64url').slice(0, 32);
}

export function preferencesToken(subscriberId: number): string {
  return `${subscriberId}.${mac(subscriberId)}`;
}

/** The subscriber a preference token names, or null for anything not made by preferencesToken under this SECRET_KEY. */
export function subscriberOfPreferencesToken(token: string): number | null {
  const match = /^([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const id = Number(match[1]);
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) return null;
  return crypto.timingSafeEqual(Buffer.from(mac(id)), Buffer.from(match[2]!)) ? id : null;
}

export const preferencesUrl = (subscriberId: number) => `${config().publicUrl}/preferences/${preferencesToken(subscriberId)}`;
