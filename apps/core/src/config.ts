import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { mxConfig, oidcConfig, smtpConfig, trackingConfig, verifyProbeConfig, type MxConfig, type OidcConfig, type SmtpConfig, type TrackingConfig, type VerifyProbeConfig } from './config-sections';
import { ConfigError, flag, hostName, integer, oneOf, parseHostList, parseTrustProxy, positiveNumber, url, type HostPort } from './config-values';

// the configuration's parts are named here too, where their callers look for them
export { ConfigError, parseHostList, parseTrustProxy, type HostPort, type MxConfig, type OidcConfig, type SmtpConfig, type TrackingConfig, type VerifyProbeConfig };

export interface Config {
  readonly env: string;
  readonly port: number;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** every Redis key and BullMQ queue of this deployment starts with it */
  readonly redisPrefix: string;
  /** Redis through Sentinel: the sentinels and the name of the monitored primary (REDIS_URL then gives only credentials, db and TLS) */
  readonly redisSentinels: HostPort[] | null;
  readonly redisSentinelName: string;
  /** a Redis Cluster's seed nodes (REDIS_URL then gives only credentials and TLS); queue prefixes get a hash tag */
  readonly redisClusterNodes: HostPort[] | null;
  /** a session-keeping connection to Postgres (not through a transaction pooler): migrations, session advisory locks */
  readonly directDatabaseUrl: string;
  /** DATABASE_URL goes through a transaction pooler (PgBouncer pool_mode=transaction): no named prepared statements, no startup options */
  readonly databaseTransactionPooling: boolean;
  /** a streaming replica for the console's searches and charts (replicas/); null: they read the primary */
  readonly databaseReadUrl: string | null;
  readonly publicUrl: string;
  readonly adminToken: string;
  /** why ADMIN_TOKEN is too weak for production (a development or test setup starts with a warning), or null */
  readonly adminTokenWeakness: string | null;
  /** 32 bytes that encrypt mailbox passwords at rest */
  readonly secretKey: Buffer;
  readonly workerConcurrency: number;
  readonly stateDir: string;
  /** how often a placed (or agreed) link is checked again, in hours; may be fractional */
  readonly linkRecheckHours: number;
  /** the link checker may fetch loopback, private and link-local addresses (tests and LAN installs only) */
  readonly allowPrivateFetch: boolean;
  /** webhooks may be delivered to loopback, private and link-local addresses (LAN installs and tests only) */
  readonly webhookAllowPrivate: boolean;
  /** the worker serves GET /metrics on this port when set (docs/operator.md) */
  readonly workerMetricsPort: number | null;
  /** the first webhook retry's delay; each next one is 4 times longer */
  readonly webhookRetryBaseMs: number;
  /** how often a mailbox without IMAP IDLE is polled for inbound mail */
  readonly inboxPollSeconds: number;
  /** mailbox failures (mailboxfull, suspend...) of different emails that suppress an address, and within how many days */
  readonly softBounceLimit: number;
  readonly softBounceDays: number;
  /** days a finished email keeps its body and attachments (the row stays), and events, webhook deliveries, inbound
   * messages, ended broadcasts' audiences, confirmation tokens and daily counts are kept; 0 keeps them for ever */
  readonly retentionDays: number;
  /** days the row of a finished email (and its Send) is kept; 0, the default, keeps them for ever */
  readonly messageRowsDays: number;
  /** days an audit log entry is kept (docs/teams.md); 0, the default, keeps them for ever */
  readonly auditRetentionDays: number;
  /** the span of each new partition of messages, message_attempts and events (docs/partitions.md) */
  readonly partitionInterval: PartitionInterval;
  /** inbound mail as events (docs/inbound-events.md): an attachment larger than this is kept as metadata only */
  readonly inboundAttachmentMaxBytes: number;
  /** request-body bytes an API process reads at once; past it, 503 with Retry-After */
  readonly maxBodyBytesInFlight: number;
  /** the largest import body (CSV or NDJSON); a larger one answers 413 */
  readonly importMaxBytes: number;
  /** bytes of email (bodies and attachments) a worker process holds on the wire at once */
  readonly workerMaxBytesInFlight: number;
  /** which proxies' X-Forwarded-For is believed: none (false), a hop count, or addresses and ranges (Express's `trust proxy`) */
  readonly trustProxy: false | number | string[];
  /** failed authentications one client address may make a minute; past it, failures answer 429 */
  readonly authFailuresPerMinute: number;
  /** HTTP connections one client (an IPv4 address, an IPv6 /64) may hold open at once on the API's port */
  readonly httpMaxConnectionsPerClient: number;
  /** docs/domains.md: the DNS servers domain checks ask (null: the system's), how long each waits, how often a domain is
   * checked again, whether a send needs a verified From domain, what SPF should include, and the VERP return-path host */
  readonly dnsServers: HostPort[] | null;
  readonly dnsTimeoutMs: number;
  readonly domainRecheckHours: number;
  readonly requireVerifiedDomain: boolean;
  readonly spfInclude: string;
  readonly returnPathHost: string;
  /** SMTP submission (apps/smtp, docs/smtp.md) */
  readonly smtp: SmtpConfig;
  /** the MX (apps/mx, docs/mx.md) */
  readonly mx: MxConfig;
  /** custom tracking domains and their certificates (docs/tracking-domains.md) */
  readonly tracking: TrackingConfig;
  /** docs/mailboxes.md: the OAuth2 apps registered at Google and Microsoft (empty: the console asks for them), the
   * Microsoft tenant, and how long before its expiry an access token is refreshed */
  readonly oauth: {
    readonly google: { readonly clientId: string; readonly clientSecret: string };
    readonly microsoft: { readonly clientId: string; readonly clientSecret: string; readonly tenant: string };
    readonly refreshMarginSeconds: number;
  };
  /** docs/verification.md: the mailbox probe, off (null) unless VERIFY_PROBE_FROM and VERIFY_PROBE_HOST are both set */
  readonly verifyProbe: VerifyProbeConfig | null;
  /** docs/teams.md: single sign-on with OpenID Connect, off (null) unless OIDC_ISSUER is set */
  readonly oidc: OidcConfig | null;
}


export function logLevel(): string {
  return process.env.LOG_LEVEL || (process.env.NODE_ENV === 'test' ? 'silent' : 'info');
}

export const PARTITION_INTERVALS = ['day', 'week', 'month'] as const;
export type PartitionInterval = (typeof PARTITION_INTERVALS)[number];

/** SECRET_KEY: 64 hex characters or 44 base64 characters (32 bytes); any other text is stretched with SHA-256. */
export function parseSecretKey(raw: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex');
  const b64 = Buffer.from(raw, 'base64');
  if (b64.length === 32 && /^[A-Za-z0-9+/]{43}=$/.test(raw)) return b64;
  if (raw.length < 16) throw new ConfigError('SECRET_KEY is too short: use 32 random bytes as 64 hex characters');
  return crypto.createHash('sha256').update(raw).digest();
}

/** The admin token's length at least; every failed guess from an address past its allowance is refused unchecked too. */
export const ADMIN_TOKEN_MIN_CHARACTERS = 32;

/**
 * Why an admin token is too weak to guard a production install, or null: fewer than 32 characters, or a few characters
 * repeated (fewer than 8 different ones). `openssl rand -hex 32` gives a good one; the generated one is 32 random
 * base64url characters after `adm_`.
 */
export function adminTokenWeakness(token: string): string | null {
  if (token.length < ADMIN_TOKEN_MIN_CHARACTERS) return `ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_CHARACTERS} random characters, it has ${token.length}`;
  if (new Set(token).size < 8) return 'ADMIN_TOKEN must be random: it repeats fewer than 8 different characters';
  return null;
}

interface LocalSecrets {
  adminToken: string;
  secretKey: string;
}

/** Secrets generated once for a machine without ADMIN_TOKEN/SECRET_KEY, kept in a mode-0600 file, never in the database. */
function localSecrets(stateDir: string): { secrets: LocalSecrets; created: boolean } {
  const file = path.join(stateDir, 'secrets.json');
  if (fs.existsSync(file)) {
    return { secrets: JSON.parse(fs.readFileSync(file, 'utf8')) as LocalSecrets, created: false };
  }
  const secrets: LocalSecrets = {
    adminToken: 'adm_' + crypto.randomBytes(24).toString('base64url'),
    secretKey: crypto.randomBytes(32).toString('hex'),
  };
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    return { secrets, created: true };
  } catch (err) {
    // another process (api and worker start together) wrote it first
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return localSecrets(stateDir);
    throw err;
  }
}

const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/mailservice';

/** REDIS_PREFIX: a hash tag's braces would be doubled by the cluster's own tag (apps/core/src/queues.ts queuePrefix). */
function redisPrefix(): string {
  const prefix = process.env.REDIS_PREFIX || 'ms';
  if (/[{}\s]/.test(prefix)) throw new ConfigError(`REDIS_PREFIX must not contain braces or spaces, got "${prefix}"`);
  return prefix;
}

/** REDIS_SENTINELS with REDIS_SENTINEL_NAME, or REDIS_CLUSTER_NODES; neither means the one server of REDIS_URL. */
function redisTopology(): Pick<Config, 'redisSentinels' | 'redisSentinelName' | 'redisClusterNodes'> {
  const redisSentinels = parseHostList('REDIS_SENTINELS', process.env.REDIS_SENTINELS, 26379);
  const redisClusterNodes = parseHostList('REDIS_CLUSTER_NODES', process.env.REDIS_CLUSTER_NODES, 6379);
  const redisSentinelName = (process.env.REDIS_SENTINEL_NAME ?? '').trim();
  if (redisSentinels && redisClusterNodes) throw new ConfigError('set REDIS_SENTINELS or REDIS_CLUSTER_NODES, not both');
  if (redisSentinels && !redisSentinelName) throw new ConfigError('REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the primary\'s name in sentinel.conf)');
  if (!redisSentinels && redisSentinelName) throw new ConfigError('REDIS_SENTINEL_NAME is set but REDIS_SENTINELS is not');
  return { redisSentinels, redisSentinelName, redisClusterNodes };
}

export function loadConfig(): Config {
  const env = process.env.NODE_ENV || 'development';
  const port = integer('PORT', 3000, 0, 65535);
  const stateDir = path.resolve(process.env.STATE_DIR || '.mailservice');
  // in production a generated key must outlive the container: it is kept only where the operator named (a volume)
  if (env === 'production' && !process.env.SECRET_KEY && !process.env.STATE_DIR) {
    throw new ConfigError('SECRET_KEY (or STATE_DIR, a kept directory to generate it into) is required when NODE_ENV=production');
  }
  let adminToken = process.env.ADMIN_TOKEN || '';
  let secretKey = process.env.SECRET_KEY || '';
  if (!adminToken || !secretKey) {
    const { secrets } = localSecrets(stateDir);
    adminToken ||= secrets.adminToken;
    secretKey ||= secrets.secretKey;
  }
  const weakness = adminTokenWeakness(adminToken);
  if (weakness && env === 'production') throw new ConfigError(`${weakness} (generate one with: openssl rand -hex 32)`);
  if (adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN must be at least 16 characters');
  const publicUrl = url('PUBLIC_URL', `http://localhost:${port}`, ['http:', 'https:']).replace(/\/+$/, '');
  return Object.freeze({
    env,
    port,
    databaseUrl: url('DATABASE_URL', DEFAULT_DATABASE_URL, ['postgresql:', 'postgres:']),
    redisUrl: url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    redisPrefix: redisPrefix(),
    ...redisTopology(),
    directDatabaseUrl: url('DIRECT_DATABASE_URL', process.env.DATABASE_URL || DEFAULT_DATABASE_URL, ['postgresql:', 'postgres:']),
    databaseTransactionPooling: flag('DATABASE_TRANSACTION_POOLING', false),
    databaseReadUrl: process.env.DATABASE_READ_URL ? url('DATABASE_READ_URL', '', ['postgresql:', 'postgres:']) : null,
    publicUrl,
    adminToken,
    adminTokenWeakness: weakness,
    secretKey: parseSecretKey(secretKey),
    workerConcurrency: integer('WORKER_CONCURRENCY', 20, 1, 1000),
    stateDir,
    linkRecheckHours: positiveNumber('LINK_RECHECK_HOURS', 24, 24 * 365),
    allowPrivateFetch: flag('ALLOW_PRIVATE_FETCH', false),
    webhookAllowPrivate: flag('WEBHOOK_ALLOW_PRIVATE', false),
    workerMetricsPort: process.env.WORKER_METRICS_PORT ? integer('WORKER_METRICS_PORT', 0, 0, 65535) : null,
    webhookRetryBaseMs: integer('WEBHOOK_RETRY_BASE_MS', 30_000, 1, 86_400_000),
    inboxPollSeconds: integer('INBOX_POLL_SECONDS', 60, 1, 86_400),
    softBounceLimit: integer('SOFT_BOUNCE_LIMIT', 3, 1, 1000),
    softBounceDays: integer('SOFT_BOUNCE_DAYS', 30, 1, 3650),
    retentionDays: integer('RETENTION_DAYS', 30, 0, 36_500),
    messageRowsDays: integer('MESSAGE_ROWS_DAYS', 0, 0, 36_500),
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', 0, 0, 36_500),
    partitionInterval: oneOf('PARTITION_INTERVAL', 'month', PARTITION_INTERVALS),
    inboundAttachmentMaxBytes: integer('INBOUND_ATTACHMENT_MAX_BYTES', 10 * 1024 * 1024, 0, 2 ** 31 - 1),
    maxBodyBytesInFlight: integer('MAX_BODY_BYTES_IN_FLIGHT', 64 * 1024 * 1024, 1024 * 1024, 2 ** 40),
    importMaxBytes: integer('IMPORT_MAX_BYTES', 100 * 1024 * 1024, 64 * 1024, 2 ** 40),
    workerMaxBytesInFlight: integer('WORKER_MAX_BYTES_IN_FLIGHT', 8 * 1024 * 1024, 1024 * 1024, 2 ** 40),
    trustProxy: parseTrustProxy(process.env.TRUST_PROXY),
    authFailuresPerMinute: integer('AUTH_FAILURES_PER_MINUTE', 20, 1, 1_000_000),
    httpMaxConnectionsPerClient: integer('HTTP_MAX_CONNECTIONS_PER_CLIENT', 256, 1, 1_000_000),
    dnsServers: parseHostList('DNS_SERVERS', process.env.DNS_SERVERS, 53),
    dnsTimeoutMs: integer('DNS_TIMEOUT_MS', 3_000, 50, 60_000),
    domainRecheckHours: positiveNumber('DOMAIN_RECHECK_HOURS', 6, 24 * 365),
    requireVerifiedDomain: flag('REQUIRE_VERIFIED_DOMAIN', env === 'production'),
    spfInclude: hostName('SPF_INCLUDE'),
    returnPathHost: hostName('RETURN_PATH_HOST'),
    smtp: smtpConfig(env),
    mx: mxConfig(env),
    tracking: trackingConfig(publicUrl),
    oauth: Object.freeze({
      google: Object.freeze({ clientId: process.env.OAUTH_GOOGLE_CLIENT_ID || '', clientSecret: process.env.OAUTH_GOOGLE_CLIENT_SECRET || '' }),
      microsoft: Object.freeze({
        clientId: process.env.OAUTH_MICROSOFT_CLIENT_ID || '',
        clientSecret: process.env.OAUTH_MICROSOFT_CLIENT_SECRET || '',
        tenant: process.env.OAUTH_MICROSOFT_TENANT || 'common',
      }),
      refreshMarginSeconds: integer('OAUTH_REFRESH_MARGIN_SECONDS', 300, 0, 3000),
    }),
    verifyProbe: verifyProbeConfig(),
    oidc: oidcConfig(),
  });
}

let current: Config | undefined;

/** The configuration, read and validated once. */
export function config(): Config {
  current ??= loadConfig();
  return current;
}

/** Where the generated admin token lives, to tell the operator at start. */
export function localSecretsFile(): string {
  return path.join(config().stateDir, 'secrets.json');
}
