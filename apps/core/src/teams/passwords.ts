import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { BadRequest } from '../errors';
import { lazy } from '../lazy';

const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

/** scrypt's cost (N=2^15, r=8, p=1: 32 MB and about 0.1-0.3 s here, above the scrypt paper's interactive 2^14); kept in each hash, so it may grow later. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
export const MIN_LENGTH = 12;

/**
 * The common-password list: zxcvbn-ts's (49,233 passwords ranked by frequency from leaked sets, long ones included:
 * `unbelievable` is number 11,674), loaded on the first password checked.
 */
const common = lazy(() => {
  const { dictionary } = require('@zxcvbn-ts/language-common') as { dictionary: Record<string, string[]> };
  return new Set(dictionary['passwords-common']!.map((p) => p.toLowerCase()));
});

/** Refuses a password shorter than 12 characters, longer than 200, or on the common-password list. */
export function checkPassword(password: string): void {
  if (typeof password !== 'string' || password.length < MIN_LENGTH) throw new BadRequest(`password: at least ${MIN_LENGTH} characters`);
  if (password.length > 200) throw new BadRequest('password: at most 200 characters');
  if (common().has(password.toLowerCase())) throw new BadRequest('password: this is one of the most common passwords; choose another');
}

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { ...COST, maxmem: 256 * 1024 * 1024 });
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

export async function passwordMatches(password: string, stored: string | null): Promise<boolean> {
  const parts = stored?.split('$') ?? [];
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    // as slow as a real check, so an unknown address takes as long as a wrong password
    await hashPassword(password);
    return false;
  }
  const [, N, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const given = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(N), r: Number(r), p: Number(p), maxmem: 256 * 1024 * 1024 });
  return crypto.timingSafeEqual(given, expected);
}
