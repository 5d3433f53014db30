import { sha256 } from '../crypto';
import type { Db, Tx } from '../db';
import { CONFIRMATION_TOKEN } from './confirm-link';
import { lockSubscriber, spendToken } from './repository';
import { becomeActive } from './activate';
import type { ConsentContext } from '../consent/repository';
import { confirmText } from './html';

/** Confirmation links work for 7 days (docs/api.md). */
export const TOKEN_TTL_MS = 7 * 24 * 3600 * 1000;

/** Cheap shape check before any database work on a token from a URL: the shape confirm-link.ts makes. */
export const looksLikeToken = (value: string) => CONFIRMATION_TOKEN.test(value);

/** Records the single-use token of a confirmation email (confirmationTokenOf, confirm-link.ts): only its SHA-256. */
export async function issueToken(tx: Tx, subscriberId: number, now: Date, token: string): Promise<string> {
  await tx.confirmationToken.create({
    data: { subscriberId, tokenHash: sha256(token), expiresAt: new Date(now.getTime() + TOKEN_TTL_MS), createdAt: now },
  });
  return token;
}

export type LinkState = 'valid' | 'used' | 'expired' | 'unknown';

export interface LinkLookup {
  state: LinkState;
  listName: string;
}

/** What a confirmation link is now, read only: GET must not change anything. */
export async function inspectLink(db: Tx, token: string, now = new Date()): Promise<LinkLookup> {
  if (!looksLikeToken(token)) return { state: 'unknown', listName: '' };
  const row = await db.confirmationToken.findUnique({
    where: { tokenHash: sha256(token) },
    include: { subscriber: { include: { list: true } } },
  });
  if (!row) return { state: 'unknown', listName: '' };
  const listName = row.subscriber.list.name;
  if (row.usedAt) return { state: 'used', listName };
  if (row.expiresAt <= now) return { state: 'expired', listName };
  return { state: 'valid', listName };
}

export type ConfirmResult = 'confirmed' | 'already' | 'gone' | Exclude<LinkState, 'valid'>;

/**
 * POST /confirm/<token>: spends the token (atomically: of two simultaneous posts one wins) and moves the pending
 * subscriber to active, counting it, in one transaction. Every other token of the subscriber is spent too.
 */
export async function confirmByLink(db: Db, token: string, now = new Date(), consent: ConsentContext = { source: 'form' }): Promise<{ result: ConfirmResult; listName: string }> {
  if (!looksLikeToken(token)) return { result: 'unknown', listName: '' };
  const hash = sha256(token);
  return db.$transaction(async (tx) => {
    const subscriberId = await spendToken(tx, hash, now);
    if (subscriberId === undefined) {
      const { state, listName } = await inspectLink(tx, token, now);
      return { result: state === 'valid' ? 'used' : state, listName };
    }
    await lockSubscriber(tx, subscriberId);
    const subscriber = await tx.subscriber.findUniqueOrThrow({ where: { id: subscriberId }, include: { list: true } });
    const listName = subscriber.list.name;
    if (subscriber.status === 'active') return { result: 'already', listName };
    if (subscriber.status !== 'pending') return { result: 'gone', listName };
    // the page the person confirmed on says what they agreed to
    const context = { formText: confirmText(listName), ...consent };
    await becomeActive(tx, { list: subscriber.list, subscriberId, email: subscriber.email, now, consent: { kind: 'confirm', context, detail: {} } });
    await tx.confirmationToken.updateMany({ where: { subscriberId, usedAt: null }, data: { usedAt: now } });
    return { result: 'confirmed', listName };
  });
}
