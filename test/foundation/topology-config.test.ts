import { Cluster, Redis } from 'ioredis';
import { ConfigError, loadConfig, parseHostList } from '../../apps/core/src/config';
import { createDb, rawQuery } from '../../apps/core/src/db';
import { connectRedis, hashTagged, serverOptions } from '../../apps/core/src/redis-connect';

/** loadConfig() reads process.env: each case sets what it needs and restores the rest. */
function withEnv<T>(env: Record<string, string | undefined>, run: () => T): T {
  const saved = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  try {
    return run();
  } finally {
    process.env = saved;
  }
}

const NONE = { REDIS_SENTINELS: undefined, REDIS_SENTINEL_NAME: undefined, REDIS_CLUSTER_NODES: undefined };

describe('Redis topology settings', () => {
  it('is one server by default, with the prefix as it is', () => {
    const cfg = withEnv(NONE, loadConfig);
    expect(cfg).toMatchObject({ redisSentinels: null, redisSentinelName: '', redisClusterNodes: null });
    expect(hashTagged('ms:bull', cfg)).toBe('ms:bull');
  });

  it('reads host lists with default ports and bracketed IPv6 addresses', () => {
    expect(parseHostList('X', 's1:26380, s2,[::1]:26381', 26379)).toEqual([
      { host: 's1', port: 26380 },
      { host: 's2', port: 26379 },
      { host: '::1', port: 26381 },
    ]);
    expect(parseHostList('X', ' ', 6379)).toBeNull();
    for (const bad of ['a:0', 'a:70000', 'a:b', 'a b', ':6379', 'a,,b']) {
      expect(() => parseHostList('X', bad, 6379)).toThrow(ConfigError);
    }
  });

  it('connects through Sentinel with the credentials, database and TLS of REDIS_URL', () => {
    const cfg = withEnv(
      { ...NONE, REDIS_URL: 'rediss://app:s%40cret@ignored:1/3', REDIS_SENTINELS: 'a:26379,b:26380', REDIS_SENTINEL_NAME: 'mymaster' },
      loadConfig,
    );
    expect(cfg.redisSentinels).toEqual([{ host: 'a', port: 26379 }, { host: 'b', port: 26380 }]);
    const options = serverOptions(cfg);
    expect(options).toMatchObject({
      sentinels: [{ host: 'a', port: 26379 }, { host: 'b', port: 26380 }],
      name: 'mymaster',
      username: 'app',
      password: 's@cret',
      sentinelPassword: 's@cret',
      db: 3,
      enableTLSForSentinelMode: true,
    });
    expect(options.tls).toEqual({});
    expect(options.host).toBeUndefined();
  });

  it('refuses half a Sentinel setting and Sentinel with Cluster', () => {
    expect(() => withEnv({ ...NONE, REDIS_SENTINELS: 'a:26379' }, loadConfig)).toThrow(/REDIS_SENTINEL_NAME/);
    expect(() => withEnv({ ...NONE, REDIS_SENTINEL_NAME: 'mymaster' }, loadConfig)).toThrow(/REDIS_SENTINELS/);
    expect(() =>
      withEnv({ ...NONE, REDIS_SENTINELS: 'a', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'b' }, loadConfig),
    ).toThrow(/not both/);
    expect(() => withEnv({ ...NONE, REDIS_PREFIX: '{ms}' }, loadConfig)).toThrow(/braces/);
  });

  it('uses TLS for rediss:// and checks the certificate against the host name', () => {
    const options = serverOptions(withEnv({ ...NONE, REDIS_URL: 'rediss://:pw@redis.example:6380' }, loadConfig));
    expect(options).toMatchObject({ host: 'redis.example', port: 6380, password: 'pw', tls: { servername: 'redis.example' } });
    expect(serverOptions(withEnv({ ...NONE, REDIS_URL: 'redis://127.0.0.1:6379' }, loadConfig)).tls).toBeUndefined();
  });

  it('makes a Cluster client from REDIS_CLUSTER_NODES and puts the queue prefix in a hash tag', () => {
    const cfg = withEnv({ ...NONE, REDIS_URL: 'redis://:pw@ignored', REDIS_CLUSTER_NODES: 'n1:7000,n2:7001' }, loadConfig);
    expect(hashTagged('ms:bull', cfg)).toBe('{ms:bull}');
    const client = connectRedis({ lazyConnect: true, enableOfflineQueue: false }, cfg);
    try {
      expect(client).toBeInstanceOf(Cluster);
      const cluster = client as Cluster;
      expect((cluster as unknown as { startupNodes: unknown }).startupNodes).toEqual([{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }]);
      expect(cluster.options.redisOptions).toMatchObject({ password: 'pw' });
      expect(cluster.options.enableOfflineQueue).toBe(false);
    } finally {
      client.disconnect();
    }
  });

  it('reaches the one server of REDIS_URL', async () => {
    const client = connectRedis({}, withEnv(NONE, loadConfig));
    try {
      expect(client).toBeInstanceOf(Redis);
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });
});

describe('Postgres behind a transaction pooler', () => {
  it('takes DIRECT_DATABASE_URL for sessions, DATABASE_URL otherwise', () => {
    const pooled = 'postgresql://app@pgbouncer:6432/mailservice';
    const direct = 'postgresql://app@db:5432/mailservice';
    expect(withEnv({ DATABASE_URL: pooled, DIRECT_DATABASE_URL: direct }, loadConfig)).toMatchObject({ databaseUrl: pooled, directDatabaseUrl: direct });
    expect(withEnv({ DATABASE_URL: pooled, DIRECT_DATABASE_URL: undefined }, loadConfig).directDatabaseUrl).toBe(pooled);
    expect(() => withEnv({ DIRECT_DATABASE_URL: 'mysql://x' }, loadConfig)).toThrow(/DIRECT_DATABASE_URL/);
    expect(withEnv({ DATABASE_TRANSACTION_POOLING: undefined }, loadConfig).databaseTransactionPooling).toBe(false);
    expect(withEnv({ DATABASE_TRANSACTION_POOLING: 'true' }, loadConfig).databaseTransactionPooling).toBe(true);
  });

  const prepared = async (db: ReturnType<typeof createDb>) =>
    (await rawQuery<{ n: number }>(db, 'SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = $1', ['topology-probe'], 'topology-probe'))[0]!.n;

  it('prepares named statements on a direct connection and none when pooled', async () => {
    const url = process.env.DATABASE_URL!;
    const direct = createDb(url, 1, false);
    const pooled = createDb(url, 1, true);
    try {
      await prepared(direct);
      expect(await prepared(direct)).toBe(1); // the first call prepared it on the pool's one connection
      await prepared(pooled);
      expect(await prepared(pooled)).toBe(0);
      // and Prisma's own statements stay unnamed there too
      expect(await pooled.$queryRawUnsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM pg_prepared_statements')).toEqual([{ n: 0 }]);
    } finally {
      await direct.$disconnect();
      await pooled.$disconnect();
    }
  });
});
