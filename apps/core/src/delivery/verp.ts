import crypto from 'node:crypto';
import { base32, unbase32 } from '../base32';
import { config } from '../config';

/**
 * VERP return paths (docs/inbound.md): a mailbox with `return_path: "verp"` sends each email with the envelope sender
 * `local+b-<token>@domain`, the token naming the message: its id (16 bytes) and 5 bytes of an HMAC under SECRET_KEY, in
 * lower-case base32 (34 characters), so a server that lower-cases the local part keeps it readable. Mail that comes back
 * to such an address is about that message, whatever its format.
 */
const mac = (id: Buffer) => crypto.createHmac('sha256', config().secretKey).update('verp:').update(id).digest().subarray(0, 5);

export function verpToken(messageId: string): string {
  const id = Buffer.from(messageId.replace(/-/g, ''), 'hex');
  return base32(Buffer.concat([id, mac(id)]));
}

/** The envelope sender of `messageId` from a mailbox at `address`. */
export function verpAddress(address: string, messageId: string): string {
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at).replace(/\+.*$/, '');
  return `${local}+b-${verpToken(messageId)}@${address.slice(at + 1)}`;
}

const VERP = /\+b-([a-z2-7]{34})@/i;

/** The message id a VERP address names, when its token is ours; else null. */
export function messageOfVerp(address: string): string | null {
  const m = VERP.exec(address);
  if (!m) return null;
  const bytes = unbase32(m[1]!);
  if (!bytes || bytes.length < 21) return null;
  const id = bytes.subarray(0, 16);
  if (!crypto.timingSafeEqual(mac(id), bytes.subarray(16, 21))) return null;
  const hex = id.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
