import crypto from 'node:crypto';
import { audited, type AuditContext } from '../audit';
import { base32 } from '../base32';
import { config } from '../config';
import { decryptSecret, encryptSecret, sha256 } from '../crypto';
import type { Db, Tx } from '../db';
import { Conflict, Unauthorized } from '../errors';
import { matchingStep, newSecret, otpauthUri } from './totp';

/** Ten one-time recovery codes, each `xxxxx-xxxxx` of base32 (50 random bits), kept only as SHA-256. */
export const RECOVERY_CODES = 10;
const RECOVERY = /^[a-z2-7]{5}-?[a-z2-7]{5}$/i;

const normalRecovery = (code: string) => code.replace(/-/g, '').toLowerCase();
const hashRecovery = (code: string) => sha256(`recovery:${normalRecovery(code)}`);

function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => {
    const chars = base32(crypto.randomBytes(7)).slice(0, 10);
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/**
 * Starts (or starts again) TOTP enrolment: a new secret, kept encrypted and not counted until a first code confirms
 * it. Answers the secret (base32) and its otpauth:// URI, shown once. A confirmed TOTP must be disabled first. The
 * pending secret is a change of the person's factors: audited (`start-totp`), the secret shown as "[redacted]".
 */
export async function startTotp(db: Db, user: { id: number; email: string }, audit: AuditContext): Promise<{ secret: string; uri: string }> {
  const secret = newSecret();
  const secretEnc = encryptSecret(secret, config().secretKey);
  const change = { action: 'start-totp', resource: 'user', id: user.id, after: () => ({ id: user.id, totp: 'pending', secret }) };
  await audited(db, audit, change, async (tx: Tx) => {
    const existing = await tx.userTotp.findUnique({ where: { userId: user.id } });
    if (existing?.confirmedAt) throw new Conflict('an authenticator app is set up already: disable it first (with a code from it)');
    await tx.userTotp.upsert({ where: { userId: user.id }, create: { userId: user.id, secretEnc }, update: { secretEnc, lastStep: null } });
  });
  return { secret, uri: otpauthUri('Mail service', user.email, secret) };
}

export type CodeCheck = 'ok' | 'wrong' | 'used';

/**
 * Whether `code` is the user's TOTP code now (one step of drift either way) and not used before: the step it belongs
 * to is recorded, so the same code, or an older one, never works twice. `confirmed: false` checks a pending secret.
 */
async function useTotpCode(tx: Tx, userId: number, code: string, confirmed: boolean, now: Date): Promise<CodeCheck> {
  const row = await tx.userTotp.findUnique({ where: { userId } });
  if (!row || (row.confirmedAt !== null) !== confirmed) return 'wrong';
  const step = matchingStep(decryptSecret(row.secretEnc, config().secretKey), code.replace(/\s/g, ''), now);
  if (step === null) return 'wrong';
  // conditional: two forms with the same code at the same moment, one wins
  const used = await tx.userTotp.updateMany({ where: { userId, OR: [{ lastStep: null }, { lastStep: { lt: BigInt(step) } }] }, data: { lastStep: BigInt(step) } });
  return used.count === 1 ? 'ok' : 'used';
}

/** Refusals of a code, in the words the person sees. */
export function codeRefusal(check: Exclude<CodeCheck, 'ok'>): Unauthorized {
  return new Unauthorized(check === 'used' ? 'That code was used already: wait for the next one (a code works once).' : 'Wrong code: check the time on your device and try the current code.');
}

/**
 * Confirms enrolment with a first code: TOTP counts from now, and ten recovery codes are made (answered once, kept as
 * SHA-256). A wrong or used code is refused (Unauthorized) and changes nothing.
 */
export async function confirmTotp(db: Db, userId: number, code: string, audit: AuditContext, now = new Date()): Promise<string[]> {
  const codes = newRecoveryCodes();
  await audited(db, audit, { action: 'enable-totp', resource: 'user', id: userId, after: () => ({ id: userId, totp: true, recovery_codes: RECOVERY_CODES }) }, async (tx: Tx) => {
    const check = await useTotpCode(tx, userId, code, false, now);
    if (check !== 'ok') throw codeRefusal(check);
    await tx.userTotp.update({ where: { userId }, data: { confirmedAt: now } });
    await tx.recoveryCode.deleteMany({ where: { userId } });
    await tx.recoveryCode.createMany({ data: codes.map((c) => ({ userId, hash: hashRecovery(c) })) });
  });
  return codes;
}

/**
 * A second-factor code at sign-in: a TOTP code (6 digits) or one of the recovery codes (used once). Answers 'ok' and
 * records the use, or what is wrong.
 */
export async function checkSignInCode(db: Db, userId: number, code: string, now = new Date()): Promise<CodeCheck> {
  const given = code.trim();
  if (RECOVERY.test(given)) {
    const used = await db.recoveryCode.updateMany({ where: { userId, hash: hashRecovery(given), usedAt: null }, data: { usedAt: now } });
    if (used.count === 1) return 'ok';
    return (await db.recoveryCode.count({ where: { userId, hash: hashRecovery(given) } })) > 0 ? 'used' : 'wrong';
  }
  return db.$transaction((tx) => useTotpCode(tx, userId, given, true, now));
}

/** Disables TOTP with a fresh code from it; its recovery codes go too. A wrong or used code changes nothing. */
export async function disableTotp(db: Db, userId: number, code: string, audit: AuditContext, now = new Date()): Promise<void> {
  await audited(db, audit, { action: 'disable-totp', resource: 'user', id: userId, after: () => ({ id: userId, totp: false }) }, async (tx: Tx) => {
    const check = await useTotpCode(tx, userId, code, true, now);
    if (check !== 'ok') throw codeRefusal(check);
    await tx.userTotp.deleteMany({ where: { userId } });
    await tx.recoveryCode.deleteMany({ where: { userId } });
  });
}
