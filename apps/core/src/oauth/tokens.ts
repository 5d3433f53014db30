import crypto from 'node:crypto';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import type { Db } from '../db';
import { logger } from '../logger';
import { dependencies } from '../outage';
import { redis, rkey } from '../redis';
import { OAuthGrantRefused, OAuthUnavailable, tokenRequest } from './client';
import { markNeedsReconnect } from './state';
import { MailboxLoginAway, MailboxNeedsReconnect, type MailboxLogins } from '../delivery/login';

/**
 * Access tokens of the mailboxes that sign in with OAuth2 (docs/mailboxes.md). The token is kept in Redis, encrypted
 * under SECRET_KEY, for every worker; it is refreshed before it expires by one worker at a time (a Redis lock per
 * mailbox), while the others wait for the new one in the cache. A rotated refresh token is stored (encrypted) before the
 * lock is let go. `invalid_grant` marks the mailbox needs_reconnect (state.ts) and answers MailboxNeedsReconnect.
 */

/** The mailbox cannot sign in until someone connects it again (delivery/login.ts): its mail waits (never failed). */
export { MailboxNeedsReconnect };

/**
 * The mailbox's provider did not answer a token request (its token endpoint down, 5xx): no request is made before
 * `retryAt`, and the mailbox's mail waits without spending attempts (delivery/failure.ts). An outage of the mailbox,
 * not of each email.
 */
export class OAuthProviderAway extends MailboxLoginAway {
  override name = 'OAuthProviderAway';
  constructor(mailboxId: number, retryAt: number, reason: string) {
    super(mailboxId, retryAt, `mailbox ${mailboxId}: the OAuth2 provider is away (${reason}); next token request after ${new Date(retryAt).toISOString()}`);
  }
}

const cacheKey = (mailboxId: number) => rkey('oauth', 'token', mailboxId);
/** The provider's outage as every worker sees it: how many token requests failed in a row, and when to ask again. */
const awayKey = (mailboxId: number) => rkey('oauth', 'away', mailboxId);
/** The pause after the first failed token request, doubled at each next failure up to AWAY_MAX_MS. */
const AWAY_FIRST_MS = 1_000;
const AWAY_MAX_MS = 300_000;

/** The dependency watch's name of a mailbox's OAuth2 provider (outage.ts): one warn line for its outage, one info line. */
const providerOf = (mailboxId: number) => `oauth provider of mailbox ${mailboxId}`;

interface Away {
  failures: number;
  retryAt: number;
  reason: string;
}

async function readAway(mailboxId: number): Promise<Away | null> {
  const raw = await redis().get(awayKey(mailboxId));
  return raw ? (JSON.parse(raw) as Away) : null;
}

/** Another failed token request: the next waits twice as long as the last (kept a while past it, to keep counting). */
async function noteAway(mailboxId: number, err: Error): Promise<OAuthProviderAway> {
  const failures = ((await readAway(mailboxId))?.failures ?? 0) + 1;
  const pause = Math.min(AWAY_FIRST_MS * 2 ** (failures - 1), AWAY_MAX_MS);
  const away: Away = { failures, retryAt: Date.now() + pause, reason: err.message };
  await redis().set(awayKey(mailboxId), JSON.stringify(away), 'PX', pause + AWAY_MAX_MS);
  dependencies.down(providerOf(mailboxId), err);
  return new OAuthProviderAway(mailboxId, away.retryAt, err.message);
}
const lockKey = (mailboxId: number) => rkey('oauth', 'lock', mailboxId);

/** Longer than a token request may take (15 s) with its database writes. */
const LOCK_MS = 30_000;
/** How long a caller waits for another worker's refresh before giving up for now. */
const WAIT_MS = 35_000;

interface CachedToken {
  token: string;
  /** when to refresh it (epoch ms): before its expiry by the margin, or at half its life when that is shorter */
  refreshAt: number;
  /** when the provider says it expires (epoch ms) */
  expiresAt: number;
}

async function readCache(mailboxId: number): Promise<CachedToken | null> {
  const sealed = await redis().get(cacheKey(mailboxId));
  if (!sealed) return null;
  try {
    return JSON.parse(decryptSecret(sealed, config().secretKey)) as CachedToken;
  } catch {
    return null;
  }
}

const usable = (cached: CachedToken | null, rejected: string | undefined): cached is CachedToken =>
  !!cached && cached.token !== rejected && cached.refreshAt > Date.now();

/** Compare-and-delete: only the holder lets its lock go. */
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * A valid access token of an OAuth2 mailbox, with when it should be asked for again. `rejected`: a token the server
 * just refused (a fresh one is fetched even if the cache still holds that one).
 */
export async function accessToken(db: Db, mailbox: Pick<Mailbox, 'id' | 'authType'>, options: { rejected?: string } = {}): Promise<CachedToken> {
  if (mailbox.authType !== 'oauth2') throw new Error(`mailbox ${mailbox.id} does not sign in with OAuth2`);
  const deadline = Date.now() + WAIT_MS;
  // a token another worker got ends the outage this process saw as well: its info line here too
  const fromCache = (token: CachedToken) => {
    dependencies.up(providerOf(mailbox.id));
    return token;
  };
  for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
    const cached = await readCache(mailbox.id);
    if (usable(cached, options.rejected)) return fromCache(cached);
    // the provider is away: no token request before its pause is over, whichever worker asks
    const away = await readAway(mailbox.id);
    if (away && away.retryAt > Date.now()) throw new OAuthProviderAway(mailbox.id, away.retryAt, away.reason);
    const holder = crypto.randomUUID();
    const locked = await redis().set(lockKey(mailbox.id), holder, 'PX', LOCK_MS, 'NX');
    if (locked === 'OK') {
      try {
        // another worker may have refreshed between our read and our lock, or found the provider away
        const again = await readCache(mailbox.id);
        if (usable(again, options.rejected)) return fromCache(again);
        const awayNow = await readAway(mailbox.id);
        if (awayNow && awayNow.retryAt > Date.now()) throw new OAuthProviderAway(mailbox.id, awayNow.retryAt, awayNow.reason);
        return await refresh(db, mailbox.id);
      } finally {
        await redis().eval(RELEASE, 1, lockKey(mailbox.id), holder).catch(() => undefined);
      }
    }
    if (Date.now() > deadline) throw new OAuthUnavailable(`mailbox ${mailbox.id}: another worker's token refresh did not finish in time`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Under the lock: asks the token endpoint for a new access token with the stored refresh token, and keeps both. */
async function refresh(db: Db, mailboxId: number): Promise<CachedToken> {
  const row = await db.mailbox.findUnique({ where: { id: mailboxId } });
  if (!row || row.authType !== 'oauth2' || !row.oauthTokenUrl || !row.oauthRefreshTokenEnc) {
    throw new MailboxNeedsReconnect(mailboxId, 'it has no refresh token');
  }
  if (row.authStatus === 'needs_reconnect') throw new MailboxNeedsReconnect(mailboxId, row.disconnectReason ?? 'consent was refused');
  const key = config().secretKey;
  const used = row.oauthRefreshTokenEnc;
  let answer;
  try {
    answer = await tokenRequest(
      row.oauthTokenUrl,
      { clientId: row.oauthClientId ?? '', clientSecret: row.oauthClientSecretEnc ? decryptSecret(row.oauthClientSecretEnc, key) : '' },
      { grant_type: 'refresh_token', refresh_token: decryptSecret(used, key), ...(row.oauthScope ? { scope: row.oauthScope } : {}) },
    );
  } catch (err) {
    if (err instanceof OAuthGrantRefused) {
      await markNeedsReconnect(db, mailboxId, used, err.message);
      await redis().del(cacheKey(mailboxId)).catch(() => undefined);
      throw new MailboxNeedsReconnect(mailboxId, err.message);
    }
    if (err instanceof OAuthUnavailable) throw await noteAway(mailboxId, err);
    throw err;
  }
  // the provider answers (again): its outage is over
  await redis().del(awayKey(mailboxId));
  dependencies.up(providerOf(mailboxId));
  if (answer.refreshToken) {
    // the provider rotated it: the old one may already be dead, so the new one is written before anyone else refreshes
    // (updatedAt kept: the SMTP pools and IMAP loops go on with their connections)
    await db.mailbox.updateMany({
      where: { id: mailboxId, oauthRefreshTokenEnc: used },
      data: { oauthRefreshTokenEnc: encryptSecret(answer.refreshToken, key), updatedAt: row.updatedAt },
    });
  }
  const now = Date.now();
  const life = answer.expiresIn * 1000;
  const cached: CachedToken = { token: answer.accessToken, expiresAt: now + life, refreshAt: now + Math.max(life - config().oauth.refreshMarginSeconds * 1000, life / 2) };
  await redis().set(cacheKey(mailboxId), encryptSecret(JSON.stringify(cached), key), 'PX', Math.max(1, Math.floor(life)));
  logger.info({ mailbox: mailboxId, expiresIn: answer.expiresIn, rotated: !!answer.refreshToken }, 'oauth: access token refreshed');
  return cached;
}

/** Forgets the cached access token (a reconnect: the next connection asks with the new refresh token). */
export async function forgetAccessToken(mailboxId: number): Promise<void> {
  await redis().del(cacheKey(mailboxId));
}

/**
 * nodemailer's and imapflow's view: the token and when to ask again (nodemailer's `expires`). A refused token
 * (`renew`) is replaced by a fresh one unless another connection already did.
 */
export function tokenProvider(db: Db, mailbox: Pick<Mailbox, 'id' | 'authType'>) {
  let last: string | undefined;
  return async (renew: boolean): Promise<{ token: string; expires: number }> => {
    const got = await accessToken(db, mailbox, renew ? { rejected: last } : {});
    last = got.token;
    return { token: got.token, expires: got.refreshAt };
  };
}

/** Delivery's login of a mailbox (delivery/login.ts): its OAuth2 token provider when it signs in with OAuth2. */
export const oauthLoginOf: MailboxLogins = (db, mailbox) => (mailbox.authType === 'oauth2' ? tokenProvider(db, mailbox) : undefined);
