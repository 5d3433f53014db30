import type { RedisOptions } from 'ioredis';
import { config } from './config';
import { dependencies, RedisNoAnswer } from './outage';
import { connectRedis, type RedisClient } from './redis-connect';

/**
 * A new connection (one server, Sentinel or Cluster: redis-connect.ts). BullMQ needs `maxRetriesPerRequest: null` on workers' connections; the queues' producer side
 * turns the offline queue off (queues.ts producerConnection), so adding a job while Redis is down fails at once.
 */
export function createRedis(options: RedisOptions = {}): RedisClient {
  return watched(connectRedis({ lazyConnect: false, ...options }));
}

/**
 * A client whose connection errors go to the dependency watch (one warn line while Redis is away, one info line when
 * it is back) instead of ioredis's own report, a stack trace for every reconnection attempt.
 */
export function watched<T extends Pick<import('node:events').EventEmitter, 'on'>>(client: T): T {
  client.on('error', (err: Error) => dependencies.down('redis', err));
  client.on('ready', () => dependencies.up('redis'));
  return client;
}

let shared: RedisClient | undefined;

/** The process's general-purpose connection (counters, pub/sub publishing). */
export function redis(): RedisClient {
  shared ??= createRedis({ maxRetriesPerRequest: 2 });
  return shared;
}

/** Connections of their own (subscribers) closed with the shared one. */
const closers = new Set<() => Promise<void>>();
export function closeWithRedis(close: () => Promise<void>): void {
  closers.add(close);
}

export async function closeRedis(): Promise<void> {
  const own = [...closers];
  closers.clear();
  await Promise.all(own.map((close) => close().catch(() => undefined)));
  if (shared) {
    const client = shared;
    shared = undefined;
    await client.quit().catch(() => client.disconnect());
  }
}

/** A key in this deployment's namespace. */
export function rkey(...parts: (string | number)[]): string {
  return [config().redisPrefix, ...parts].join(':');
}

/** How long a request waits for Redis: the accept's bound (delivery/outbox.ts), for every call a request makes. */
export const REDIS_DEADLINE_MS = 500;

/**
 * `work` (a call to Redis), or RedisNoAnswer once `ms` passed without its answer: a Redis that hangs costs a request
 * half a second, not the TCP timeout. A call in time says Redis answers (the dependency watch's info line after an
 * outage: a Redis that hung and resumed never reconnects, so no `ready` event says it).
 */
export async function withinRedisDeadline<T>(work: Promise<T>, ms = REDIS_DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisNoAnswer(ms)), ms);
  });
  try {
    const answer = await Promise.race([work, late]);
    dependencies.up('redis');
    return answer;
  } finally {
    clearTimeout(timer);
  }
}
