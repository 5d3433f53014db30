import crypto from 'node:crypto';
import { base32, unbase32 } from '../base32';

/**
 * TOTP (RFC 6238 over RFC 4226's HOTP): HMAC-SHA-1, 6 digits, 30-second steps, one step of drift either way. The
 * secret is 20 random bytes (RFC 4226's recommended 160 bits), shown as RFC 4648 base32 in upper case.
 */
export const STEP_SECONDS = 30;
export const DIGITS = 6;
export const newSecret = (): string => base32(crypto.randomBytes(20)).toUpperCase();

/** RFC 4226 HOTP of counter `step`: dynamic truncation, 6 digits. */
export function hotp(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = crypto.createHmac('sha1', secret).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** DIGITS;
  return String(code).padStart(DIGITS, '0');
}

export const stepAt = (now: Date): number => Math.floor(now.getTime() / 1000 / STEP_SECONDS);

/** The step (now, one before or one after) whose code `code` is, or null. Compared in constant time. */
export function matchingStep(secretBase32: string, code: string, now: Date): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const secret = unbase32(secretBase32.replace(/[\s=]/g, ''));
  if (!secret) return null;
  const current = stepAt(now);
  let found: number | null = null;
  for (const step of [current - 1, current, current + 1]) {
    if (crypto.timingSafeEqual(Buffer.from(hotp(secret, step)), Buffer.from(code)) && found === null) found = step;
  }
  return found;
}

/** The otpauth:// URI an authenticator app reads (Google Authenticator's Key URI Format). */
export function otpauthUri(issuer: string, account: string, secretBase32: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const params = new URLSearchParams({ secret: secretBase32, issuer, algorithm: 'SHA1', digits: String(DIGITS), period: String(STEP_SECONDS) });
  return `otpauth://totp/${label}?${params.toString()}`;
}
