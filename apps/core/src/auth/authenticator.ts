import type { RedisClient as Redis } from '../redis-connect';
import type { ApiKey } from '../../../../generated/prisma/client';
import { sha256 } from '../crypto';
import type { Db } from '../db';
import { logger } from '../logger';
import { createRedis } from '../redis';
import { acknowledgeRevocation, findActiveKey, isExpired, parseRevocation, revocationChannel } from './keys';

const CACHE_TTL_MS = 60_000;
const CACHE_MAX = 10_000;
/** An unknown well-formed key is answered from memory this long: a client repeating it costs no lookup. */
const UNKNOWN_TTL_MS = 10_000;
const CLIENTS_MAX = 10_000;
/** last_used_at is written at most this often per key and process, not on every request. */
const LAST_USED_EVERY_MS = 60_000;

/**
 * Finds the key behind a bearer token. Live keys are cached in memory by fingerprint; a revocation is announced on
 * Redis pub/sub and drops the entry on every API process, each of which acknowledges it before the revocation answers
 * (auth/keys.ts announceRevocation). While the subscription is down the cache is bypassed,
 * so a missed announcement can never keep a revoked key alive.
 */
export class KeyAuthenticator {
  private readonly cache = new Map<string, { key: ApiKey; until: number }>();
  private readonly unknown = new Map<string, number>();
  private subscriber?: Redis;

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    const subscriber = createRedis({ maxRetriesPerRequest: null });
    // its connection errors are the dependency watch's (createRedis): one line while Redis is away
    // anything may have been revoked while we were not listening
    subscriber.on('ready', () => this.cache.clear());
    subscriber.on('message', (_channel, message: string) => {
      const { fingerprint, acks } = parseRevocation(message);
      this.cache.delete(fingerprint);
      if (acks) acknowledgeRevocation(acks).catch((err: Error) => logger.warn({ err: err.message }, 'could not acknowledge a key revocation'));
    });
    await subscriber.subscribe(revocationChannel());
    this.subscriber = subscriber;
  }

  async stop(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.cache.clear();
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  private get listening(): boolean {
    return this.subscriber?.status === 'ready';
  }

  /** The key of a token, refusing an expired one as unknown (what the SMTP submission and the fast lane need). */
  async authenticate(token: string): Promise<ApiKey | null> {
    const key = await this.authenticateOrExpired(token);
    return key === 'expired' ? null : key;
  }

  /** The key of a token, or `expired` for a known key whose end has come (docs/teams.md: 401 "key expired"). */
  async authenticateOrExpired(token: string): Promise<ApiKey | 'expired' | null> {
    const fingerprint = sha256(token);
    const now = Date.now();
    const cached = this.listening ? this.cache.get(fingerprint) : undefined;
    let key: ApiKey | null;
    if (cached && cached.until > now) {
      key = cached.key;
    } else {
      if ((this.unknown.get(fingerprint) ?? 0) > now) return null;
      key = await findActiveKey(this.db, token);
      if (!key) {
        remember(this.unknown, fingerprint, now + UNKNOWN_TTL_MS);
        return null;
      }
      if (this.listening) {
        if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
        this.cache.set(fingerprint, { key, until: now + CACHE_TTL_MS });
      }
    }
    if (isExpired(key, now)) return 'expired';
    this.touch(key, now);
    return key;
  }

  private touch(key: ApiKey, now: number): void {
    if (key.lastUsedAt && now - key.lastUsedAt.getTime() < LAST_USED_EVERY_MS) return;
    key.lastUsedAt = new Date(now);
    this.db.apiKey
      .update({ where: { id: key.id }, data: { lastUsedAt: key.lastUsedAt } })
      .catch((err: Error) => logger.warn({ err: err.message, key: key.id }, 'could not record last use of a key'));
  }
}

/** A bounded map: past CLIENTS_MAX entries the oldest goes. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= CLIENTS_MAX) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

