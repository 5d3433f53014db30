import type { RedisOptions } from 'ioredis';
import { config } from './config';
import { connectRedis, type RedisClient } from './redis-connect';

/**
 * A new connection (one server, Sentinel or Cluster: redis-connect.ts). BullMQ needs `maxRetriesPerRequest: null` on workers' connections; the queues' producer side
 * turns the offline queue off (queues.ts producerConnection), so adding a job while Redis is down fails at once.
 */
export function createRedis(options: RedisOptions = {}): RedisClient {
  return connectRedis({ lazyConnect: false, ...options });
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
