import type { ApiKey } from '../../../../generated/prisma/client';
import { randomBase62, sha256 } from '../crypto';
import type { Db, Tx } from '../db';
import { audited, type AuditContext } from '../audit';
import { NotFound } from '../errors';
import { logger } from '../logger';
import { redis, rkey } from '../redis';
import { requireAccount } from '../accounts';
import { requireMailbox } from '../mailboxes';
import { accountWhere, type AccountScope } from '../account-scope';

export const KEY_PREFIX = 'msk_';
/** A test key's prefix (docs/sandbox.md): its sends go to the sandbox, never out. */
export const TEST_KEY_PREFIX = 'ms_test_';
/** 32 base62 characters: about 190 random bits. */
const KEY_RANDOM_LENGTH = 32;
const KEY_PATTERN = /^(?:msk_|ms_test_)[0-9A-Za-z]{32}$/;

/** Pub/sub channel on which revocations are announced to every API process. */
export const revocationChannel = () => rkey('keys', 'revoked');
/** How long a revocation waits for the API processes to say they dropped the key from their caches. */
const REVOCATION_ACK_MS = 2_000;
/** An acknowledgement list outlives a revocation that gave up waiting by this much, then Redis drops it. */
const REVOCATION_ACK_TTL_MS = 60_000;

/** docs/teams.md: what a key may be allowed to do; a key made without `scopes` holds them all. */
export const SCOPES = ['send', 'subscribers', 'prospects', 'templates', 'inbound', 'read'] as const;
export type Scope = (typeof SCOPES)[number];

/** Whether the key's end has come (it then answers 401 "key expired"). */
export const isExpired = (key: Pick<ApiKey, 'expiresAt'>, now = Date.now()): boolean => key.expiresAt !== null && key.expiresAt.getTime() <= now;

/**
 * The key's From domain rule: a key made with `domains` sends only from addresses of those domains (or their
 * subdomains). The refusal's words, or null.
 */
export function keyDomainRefusal(key: Pick<ApiKey, 'domains'>, from: string): string | null {
  if (!key.domains.length) return null;
  const domain = from.trim().toLowerCase().split('@').pop() ?? '';
  return key.domains.some((d) => domain === d || domain.endsWith(`.${d}`)) ? null : `this key may send only from ${key.domains.join(', ')}`;
}

export function isWellFormedKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

export interface KeyView {
  id: number;
  account: number;
  name: string;
  mailbox: number;
  daily_limit: number;
  prospects: boolean;
  mode: 'live' | 'test';
  scopes: string[];
  domains: string[];
  expires_at: string | null;
  hint: string;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export function keyView(k: ApiKey): KeyView {
  return {
    id: k.id,
    account: k.accountId,
    name: k.name,
    mailbox: k.mailboxId,
    daily_limit: k.dailyLimit,
    prospects: k.prospects,
    mode: k.mode,
    scopes: k.scopes,
    domains: k.domains,
    expires_at: k.expiresAt?.toISOString() ?? null,
    hint: `${k.prefix}…${k.lastFour}`,
    revoked_at: k.revokedAt?.toISOString() ?? null,
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    created_at: k.createdAt.toISOString(),
  };
}

export interface NewKey {
  account: number;
  name: string;
  mailbox: number;
  daily_limit: number;
  prospects?: boolean;
  mode?: 'live' | 'test';
  scopes?: Scope[];
  domains?: string[];
  expires_at?: Date | null;
}

/** Creates a key; the token is in this answer only, the database keeps its SHA-256 fingerprint. */
export async function createKey(db: Tx, input: NewKey): Promise<{ key: KeyView; token: string }> {
  await requireAccount(db, input.account);
  await requireMailbox(db, input.account, input.mailbox);
  const prefix = input.mode === 'test' ? TEST_KEY_PREFIX : KEY_PREFIX;
  const token = prefix + randomBase62(KEY_RANDOM_LENGTH);
  const key = await db.apiKey.create({
    data: {
      accountId: input.account,
      mailboxId: input.mailbox,
      name: input.name,
      fingerprint: sha256(token),
      prefix: token.slice(0, prefix.length + 4),
      lastFour: token.slice(-4),
      dailyLimit: input.daily_limit,
      prospects: input.prospects ?? false,
      mode: input.mode ?? 'live',
      ...(input.scopes ? { scopes: [...new Set(input.scopes)] } : {}),
      ...(input.domains ? { domains: [...new Set(input.domains.map((d) => d.toLowerCase()))] } : {}),
      expiresAt: input.expires_at ?? null,
    },
  });
  return { key: keyView(key), token };
}

export async function listKeys(db: Tx, account?: AccountScope): Promise<KeyView[]> {
  const keys = await db.apiKey.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return keys.map(keyView);
}

/** Marks the key revoked; returns its fingerprint so callers can announce it. Revoking twice is harmless. */
export async function revokeKey(db: Tx, id: number): Promise<{ key: KeyView; fingerprint: string }> {
  const existing = await db.apiKey.findUnique({ where: { id } });
  if (!existing) throw new NotFound(`no key with id ${id}`);
  const key = existing.revokedAt
    ? existing
    : await db.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
  return { key: keyView(key), fingerprint: key.fingerprint };
}

/**
 * Revokes the key and announces it: every API process drops it from its cache (the database already refuses it). With
 * `audit`, the revocation and its audit entry are one transaction, announced once committed.
 */
export async function revokeKeyEverywhere(db: Db, id: number, audit?: AuditContext): Promise<KeyView> {
  const { key, fingerprint } = audit
    ? await audited(db, audit, { action: 'revoke', resource: 'key', before: (tx) => keyBefore(tx, id), after: (r) => r.key }, (tx: Tx) => revokeKey(tx, id))
    : await revokeKey(db, id);
  await announceRevocation(fingerprint);
  return key;
}

/** Creates a key, with its audit entry in the same transaction. */
export async function createKeyAudited(db: Db, input: NewKey, audit: AuditContext): Promise<{ key: KeyView; token: string }> {
  return audited(db, audit, { action: 'create', resource: 'key', after: (r) => r.key }, (tx: Tx) => createKey(tx, input));
}

async function keyBefore(tx: Tx, id: number): Promise<KeyView | undefined> {
  const key = await tx.apiKey.findUnique({ where: { id } });
  return key ? keyView(key) : undefined;
}

/**
 * Publishes the fingerprint with a fresh acknowledgement list, and returns once every process that received the message
 * has dropped the key and said so on that list (acknowledgeRevocation), or after REVOCATION_ACK_MS. Without the wait a
 * request sent right after the revocation's answer could reach another process before the message does (both are
 * bytes on sockets of one event loop, read in no set order) and pass on its cached key: "revoking a key stops it at
 * once" (docs/api.md) holds only once the caches are known to be empty.
 */
async function announceRevocation(fingerprint: string): Promise<void> {
  const acks = rkey('keys', 'revoked', randomBase62(16));
  const receivers = await redis().publish(revocationChannel(), `${fingerprint} ${acks}`);
  const deadline = Date.now() + REVOCATION_ACK_MS;
  try {
    let acknowledged = 0;
    while (acknowledged < receivers) {
      if (Date.now() >= deadline) {
        logger.warn({ receivers, acknowledged }, 'not every API process acknowledged a key revocation in time');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
      acknowledged = await redis().llen(acks);
    }
  } finally {
    await redis().del(acks).catch(() => undefined);
  }
}

/** A revocation message: the key's fingerprint and, from processes that wait for it, where to acknowledge it. */
export function parseRevocation(message: string): { fingerprint: string; acks?: string } {
  const [fingerprint = '', acks] = message.split(' ');
  return { fingerprint, acks };
}

/** Tells the revoking process that this one has dropped the key from its cache. */
export async function acknowledgeRevocation(acks: string): Promise<void> {
  await redis().multi().rpush(acks, '1').pexpire(acks, REVOCATION_ACK_TTL_MS).exec();
}

/** The live key behind a token, or null (unknown or revoked). */
export async function findActiveKey(db: Tx, token: string): Promise<ApiKey | null> {
  if (!isWellFormedKey(token)) return null;
  const key = await db.apiKey.findUnique({ where: { fingerprint: sha256(token) } });
  return key && !key.revokedAt ? key : null;
}
