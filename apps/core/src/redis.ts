import type { RedisOptions } from 'ioredis';
import { config } from './config';
import { dependencies } from './outage';
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
