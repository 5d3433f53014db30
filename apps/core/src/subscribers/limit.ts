import crypto from 'node:crypto';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { redis, rkey, withinRedisDeadline } from '../redis';

/** docs/api.md: new subscribers per list per rolling hour through the API. */
export const NEW_SUBSCRIBERS_PER_HOUR = 600;
export const WINDOW_MS = 3_600_000;

/** The API and the hosted form count in separate windows of the same size (docs/lists.md). */
export type Channel = 'api' | 'form';

/** Keyed by the list's public key (unique and never changed), which the API knows before it reads the list. */
export function windowKey(listKey: string, channel: Channel): string {
  return rkey('subscribers', 'hourly', channel, listKey);
}

/**
 * A sliding window as a sorted set of reservations scored by time (Redis's clock, the same for every API process).
 * Drops the entries older than the window, then takes a slot only when fewer than `limit` remain: a refused request
 * takes nothing. Answers {1, 0} when taken, {0, ms until the oldest entry leaves the window} when full.
 */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] then return {0, tonumber(oldest[2]) + window - now} end
  return {0, window}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}
`;

export type Reservation = { taken: true; release(): Promise<void> } | { taken: false; retryAfterMs: number };

/** Takes one slot of the list's hourly window for a person who may be new. */
export async function reserveNewSubscriber(listKey: string, channel: Channel, limit = NEW_SUBSCRIBERS_PER_HOUR): Promise<Reservation> {
  return reserve(windowKey(listKey, channel), WINDOW_MS, limit);
}

/** Posts of the hosted form one client address may make in FORM_CLIENT_WINDOW_MS, whatever the list. */
export const FORM_POSTS_PER_CLIENT = 20;
export const FORM_CLIENT_WINDOW_MS = 600_000;

/** Takes one slot of the client's window of form posts (kept: a post is a post, whatever came of it). */
export function reserveFormPost(client: string): Promise<Reservation> {
  return reserve(rkey('subscribers', 'form-client', client), FORM_CLIENT_WINDOW_MS, FORM_POSTS_PER_CLIENT);
}

/**
 * One-click unsubscribe posts (RFC 8058) one client may make in UNSUBSCRIBE_CLIENT_WINDOW_MS: generous, since a
 * mailbox provider posts for all its users from a few addresses, and only there to bound what a flood costs.
 */
export const UNSUBSCRIBE_POSTS_PER_CLIENT = 120;
export const UNSUBSCRIBE_CLIENT_WINDOW_MS = 60_000;

/** Takes one slot of the client's window of unsubscribe posts. */
export function reserveUnsubscribePost(client: string): Promise<Reservation> {
  return reserve(rkey('subscribers', 'unsubscribe-client', client), UNSUBSCRIBE_CLIENT_WINDOW_MS, UNSUBSCRIBE_POSTS_PER_CLIENT);
}

/**
 * The preference centre's "send me my link" (docs/preferences.md): posts one client (a network: an IPv4 address, an
 * IPv6 /64) may make in the window, and links one address of a list may be sent in it.
 */
export const LINK_REQUESTS_PER_CLIENT = 10;
export const LINKS_PER_ADDRESS = 3;
export const LINK_WINDOW_MS = 3_600_000;

export function reserveLinkRequest(client: string): Promise<Reservation> {
  return reserve(rkey('preferences', 'link-client', client), LINK_WINDOW_MS, LINK_REQUESTS_PER_CLIENT);
}

export function reserveLinkEmail(listKey: string, email: string): Promise<Reservation> {
  return reserve(rkey('preferences', 'link-address', listKey, email), LINK_WINDOW_MS, LINKS_PER_ADDRESS);
}

/**
 * Redis decides whether the person may be added: while it is away or hangs, the request is refused with 503 and
 * Retry-After within REDIS_DEADLINE_MS (the error is an outage's: outage.ts, refusalOf), and nothing is written.
 */
async function reserve(key: string, windowMs: number, limit: number): Promise<Reservation> {
  const member = crypto.randomUUID();
  const answer = (await withinRedisDeadline(redis().eval(RESERVE, 1, key, windowMs, limit, member))) as [number, number];
  if (answer[0] !== 1) return { taken: false, retryAfterMs: Math.max(1000, answer[1]) };
  return {
    taken: true,
    // the request did not add a new person after all (exists, gone, suppressed, or it failed): give the slot back; a
    // slot Redis did not take back in time ages out of the window
    release: async () => {
      await withinRedisDeadline(redis().zrem(key, member)).catch((err: unknown) => {
        if (!noteOutage(err)) logger.warn({ err: (err as Error).message, key }, 'could not give back a subscriber rate-limit slot');
      });
    },
  };
}
