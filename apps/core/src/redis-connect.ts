import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { config, type Config } from './config';

/** A connection to the deployment's Redis: one server (possibly found through Sentinel) or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * ioredis options for one server from REDIS_URL: host, port, user, password, database, and TLS for `rediss://` (the
 * server's certificate is checked against the system's CAs; NODE_EXTRA_CA_CERTS adds a private CA). Under Sentinel the
 * sentinels give the primary's address and REDIS_URL only the credentials, database and TLS of the primary; under a
 * Cluster the seed nodes give the addresses and REDIS_URL the credentials and TLS of every node.
 */
export function serverOptions(cfg: Pick<Config, 'redisUrl' | 'redisSentinels' | 'redisSentinelName'> = config()): RedisOptions {
  const url = new URL(cfg.redisUrl);
  const options: RedisOptions = {
    host: url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: url.port ? Number(url.port) : 6379,
  };
  if (url.username) options.username = decodeURIComponent(url.username);
  if (url.password) options.password = decodeURIComponent(url.password);
  const db = url.pathname.replace(/^\//, '');
  if (db) options.db = Number(db);
  if (url.protocol === 'rediss:') options.tls = { servername: options.host };
  if (cfg.redisSentinels) {
    options.sentinels = cfg.redisSentinels.map(({ host, port }) => ({ host, port }));
    options.name = cfg.redisSentinelName;
    // the sentinels themselves: same password and TLS as the servers they watch
    if (options.password) options.sentinelPassword = options.password;
    if (options.tls) {
      options.enableTLSForSentinelMode = true;
      options.sentinelTLS = {};
    }
    delete options.host;
    delete options.port;
    delete options.tls?.servername;
  }
  return options;
}

/** A new connection with `extra` options (maxRetriesPerRequest, enableOfflineQueue, retryStrategy...). */
export function connectRedis(extra: RedisOptions = {}, cfg: Config = config()): RedisClient {
  const options = { ...serverOptions(cfg), ...extra };
  if (!cfg.redisClusterNodes) return new Redis(options);
  const { host: _host, port: _port, enableOfflineQueue, retryStrategy, lazyConnect, ...perNode } = options;
  return new Cluster(
    cfg.redisClusterNodes.map(({ host, port }) => ({ host, port })),
    {
      redisOptions: perNode,
      enableOfflineQueue: enableOfflineQueue ?? true,
      lazyConnect: lazyConnect ?? false,
      // a node gone: ask the others for the slots again, as often as a single server is reconnected
      clusterRetryStrategy: retryStrategy ? (attempt) => retryStrategy(attempt) ?? null : undefined,
      // TLS nodes announce their addresses; checking the certificate against the announced name
      ...(perNode.tls ? { dnsLookup: (address, done) => done(null, address) } : {}),
    },
  );
}

/** BullMQ keeps each queue's keys under one hash tag on a Cluster, so its multi-key scripts stay in one slot. */
export function hashTagged(prefix: string, cfg: Pick<Config, 'redisClusterNodes'> = config()): string {
  return cfg.redisClusterNodes ? `{${prefix}}` : prefix;
}
