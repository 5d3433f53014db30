import crypto from 'node:crypto';
import type { RedisClient } from '../redis-connect';
import { LimitReached, Unauthorized } from '../errors';
import { clientKey } from '../ip';
import { logger } from '../logger';
import { closeWithRedis, createRedis, redis, rkey } from '../redis';

const WINDOW_MS = 60_000;
/** Client addresses remembered at once; past it the oldest is forgotten. */
const CLIENTS_MAX = 10_000;

/**
 * The one failed-authentication rule of the API process, for every credential it takes: API keys (missing, malformed,
 * unknown or revoked), the admin token (bearer or the dashboard's Basic password) and the console's sign-in. One client
 * (an IPv4 address, or an IPv6 /64: core/ip clientKey) may fail `perMinute` times in a window of a minute that starts
 * with its first failure. Once it has, every credential it presents until the window ends is refused unchecked with 429
 * and Retry-After, the right one included: the answer tells a guess nothing, and guessing runs at `perMinute` a minute
 * (docs/hardening.md).
 *
 * Once started, the allowance is one for every process of the deployment (the API's and the SMTP submission's): each
 * failure is announced on a Redis channel and counted by every started process, so a guesser locked out of SMTP AUTH is
 * locked out of the HTTP API too, and the reverse. The checks stay in memory; Redis away, each process counts its own.
 */
export class AuthFailures {
  private readonly clients = new Map<string, { count: number; since: number }>();
  /** this process's name on the channel: its own announcements are counted already */
  private readonly id = crypto.randomUUID();
  private subscriber: RedisClient | undefined;
  /** When the last lockout of any client ends: until then a caller that has no client address at hand asks (lane.ts). */
  private lockoutsUntil = 0;

  constructor(readonly perMinute: number) {}

  /** Whether any client may be locked out now; false costs a caller nothing more (the fast lane's check). */
  anyLockedOut(now = Date.now()): boolean {
    return now < this.lockoutsUntil;
  }

  /**
   * The 429 to throw, without looking at the credential, when `address` has spent its allowance in the current window;
   * null when it may present one.
   */
  lockedOut(address: string, now = Date.now()): LimitReached | null {
    if (!this.anyLockedOut(now)) return null;
    const entry = this.clients.get(clientKey(address));
    if (!entry || now - entry.since >= WINDOW_MS || entry.count < this.perMinute) return null;
    return tooMany(entry.since, now);
  }

  /** Joins the deployment's failures (the channel); stop() leaves. */
  async start(): Promise<void> {
    if (this.subscriber) return;
    const connection = createRedis({ maxRetriesPerRequest: null });
    connection.on('error', (err) => logger.warn({ err: err.message }, 'failed-authentication channel error'));
    connection.on('message', (_channel, payload: string) => {
      const [from, client] = payload.split(' ');
      if (from !== this.id && client) this.count(client, Date.now());
    });
    this.subscriber = connection;
    closeWithRedis(() => this.stop());
    await connection.subscribe(channel()).catch((err: Error) => logger.warn({ err: err.message }, 'could not join the failed-authentication channel'));
  }

  async stop(): Promise<void> {
    const connection = this.subscriber;
    this.subscriber = undefined;
    await connection?.quit().catch(() => connection.disconnect());
  }

  /**
   * Records a failure of `address` and answers the error to throw: 401 with `unauthorized`'s wording and headers, or
   * 429 once the client is past its allowance.
   */
  refuse(address: string, unauthorized: Unauthorized, now = Date.now()): Unauthorized | LimitReached {
    const client = clientKey(address);
    const entry = this.count(client, now);
    if (this.subscriber) void redis().publish(channel(), `${this.id} ${client}`).catch(() => undefined);
    if (entry.count <= this.perMinute) return unauthorized;
    return tooMany(entry.since, now);
  }

  /** Counts one failure of `client` in its window. */
  private count(client: string, now: number): { count: number; since: number } {
    let entry = this.clients.get(client);
    if (!entry || now - entry.since >= WINDOW_MS) {
      entry = { count: 0, since: now };
      this.clients.delete(client);
      if (this.clients.size >= CLIENTS_MAX) this.clients.delete(this.clients.keys().next().value as string);
      this.clients.set(client, entry);
    }
    entry.count++;
    if (entry.count >= this.perMinute) this.lockoutsUntil = Math.max(this.lockoutsUntil, entry.since + WINDOW_MS);
    return entry;
  }
}

const channel = () => rkey('auth', 'failures');

function tooMany(since: number, now: number): LimitReached {
  return new LimitReached('too many failed authentications from this address; try again later', (since + WINDOW_MS - now) / 1000);
}
