import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import { firstHostUrl } from './failover/hosts';

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

/** SSO with OpenID Connect (docs/teams.md). */
export interface OidcConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** the ID token claim whose values give roles (a dotted path reads a nested one: `realm_access.roles`) */
  readonly roleClaim: string;
  /** OIDC_ROLE_MAP: a claim value -> `operator`, or an account and its role */
  readonly roleMap: ReadonlyMap<string, 'operator' | { readonly account: number; readonly role: 'owner' | 'admin' | 'sender' | 'viewer' }>;
  /** OIDC_SCOPES: asked of the provider (some send groups only for a scope of their own: Okta's `groups`) */
  readonly scopes: string;
  /** what the console's button says: "Sign in with <label>" */
  readonly label: string;
}

export interface VerifyProbeConfig {
  /** the MAIL FROM address (its domain is the EHLO name) */
  readonly from: string;
  /** the local address the probe connects from, never the sending relay's */
  readonly host: string;
  /** the MX servers' port (25; a test's own servers listen elsewhere) */
  readonly port: number;
  /** probe connections a minute, all processes together */
  readonly perMinute: number;
}

/** SMTP submission's settings (docs/smtp.md): the ports, TLS, and the bounds that keep strangers cheap. */
export interface SmtpConfig {
  /** submission with STARTTLS; the SMTP process runs (npm start) only when it is set */
  readonly port: number | null;
  /** submission over implicit TLS */
  readonly portTls: number | null;
  readonly host: string;
  /** the name in the greeting and EHLO answer */
  readonly name: string;
  /** PEM files; when unset, a self-signed pair is made in STATE_DIR (not in production) */
  readonly tlsCert: string | null;
  readonly tlsKey: string | null;
  /** AUTH without TLS (loopback development only) */
  readonly allowInsecureAuth: boolean;
  readonly maxConnectionsPerAddress: number;
  readonly maxConnections: number;
  /** how long a connection may stay unauthenticated */
  readonly authTimeoutSeconds: number;
  /** how long a connection may wait idle for its client's next command */
  readonly idleTimeoutSeconds: number;
  /** how long a message's DATA may take to arrive */
  readonly dataTimeoutSeconds: number;
  /** the SMTP process serves GET /metrics on this port when set */
  readonly metricsPort: number | null;
}

/** The MX's settings (docs/mx.md). */
export interface MxConfig {
  /** the MX runs (npm start) only when it is set; 25 in production */
  readonly port: number | null;
  readonly host: string;
  /** the name in the banner and EHLO answer, and what inbound domains' MX records point at */
  readonly hostname: string;
  /** MX_MAX_BYTES: larger messages are refused 552 */
  readonly maxBytes: number;
  /** rspamd's HTTP API (its controller or normal worker); no scoring when empty */
  readonly rspamdUrl: string;
  readonly maxConnections: number;
  readonly idleTimeoutSeconds: number;
  /** the MX process serves GET /metrics on this port when set */
  readonly metricsPort: number | null;
}

function mxConfig(): MxConfig {
  const optionalPort = (name: string) => (process.env[name] ? integer(name, 0, 0, 65535) : null);
  const rspamd = (process.env.RSPAMD_URL ?? '').trim().replace(/\/+$/, '');
  if (rspamd) url('RSPAMD_URL', rspamd, ['http:', 'https:']);
  return Object.freeze({
    port: optionalPort('MX_PORT'),
    host: process.env.MX_HOST || '0.0.0.0',
    hostname: hostName('MX_HOSTNAME') || os.hostname(),
    maxBytes: integer('MX_MAX_BYTES', 26_214_400, 1024, 2 ** 31 - 1),
    rspamdUrl: rspamd,
    maxConnections: integer('MX_MAX_CONNECTIONS', 1000, 1, 1_000_000),
    idleTimeoutSeconds: integer('MX_IDLE_TIMEOUT_SECONDS', 300, 1, 3600),
    metricsPort: optionalPort('MX_METRICS_PORT'),
  });
}

/** docs/tracking-domains.md: the HTTPS listener, the CNAME target, and the ACME directory certificates come from. */
export interface TrackingConfig {
  /** the HTTPS listener serving tracking domains by SNI; none when unset */
  readonly httpsPort: number | null;
  /** the port links on a tracking domain name (default HTTPS_PORT; 443 is left out of the link) */
  readonly linkPort: number;
  /** what a tracking domain's CNAME points at (default: PUBLIC_URL's host) */
  readonly hostname: string;
  /** where certificates are ordered; empty: none are, domains wait at `issuing` */
  readonly acmeDirectoryUrl: string;
  /** the ACME account's contact address (optional) */
  readonly acmeEmail: string;
  /** a PEM file trusted for the ACME directory's own HTTPS (a private CA); the system's roots otherwise */
  readonly acmeCaFile: string | null;
  /** the CA's CAA identities (default: the directory's `meta.caaIdentities`) */
  readonly acmeCaaIdentities: string[];
  /** the first retry's delay after an ACME server did not answer; each next one 4 times longer, at most 6 hours */
  readonly acmeRetryBaseMs: number;
  /** how long a pending domain waits for its next DNS check */
  readonly recheckMinutes: number;
}

function trackingConfig(publicUrl: string): TrackingConfig {
  const httpsPort = process.env.HTTPS_PORT ? integer('HTTPS_PORT', 0, 0, 65535) : null;
  const directory = (process.env.ACME_DIRECTORY_URL ?? '').trim();
  if (directory) url('ACME_DIRECTORY_URL', directory, ['https:', 'http:']);
  return Object.freeze({
    httpsPort,
    linkPort: integer('TRACK_LINK_PORT', httpsPort ?? 443, 1, 65535),
    hostname: hostName('TRACK_HOSTNAME') || new URL(publicUrl).hostname.toLowerCase(),
    acmeDirectoryUrl: directory,
    acmeEmail: (process.env.ACME_EMAIL ?? '').trim(),
    acmeCaFile: process.env.ACME_CA_FILE || null,
    acmeCaaIdentities: (process.env.ACME_CAA_IDENTITIES ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean),
    acmeRetryBaseMs: integer('ACME_RETRY_BASE_MS', 60_000, 1, 86_400_000),
    recheckMinutes: positiveNumber('TRACK_RECHECK_MINUTES', 10, 24 * 60 * 365),
  });
}

function smtpConfig(env: string): SmtpConfig {
  const optionalPort = (name: string) => (process.env[name] ? integer(name, 0, 0, 65535) : null);
  const tlsCert = process.env.SMTP_TLS_CERT || null;
  const tlsKey = process.env.SMTP_TLS_KEY || null;
  if (!tlsCert !== !tlsKey) throw new ConfigError('SMTP_TLS_CERT and SMTP_TLS_KEY go together: set both or neither');
  const port = optionalPort('SMTP_PORT');
  const portTls = optionalPort('SMTPS_PORT');
  if (env === 'production' && (port !== null || portTls !== null) && !tlsCert) {
    throw new ConfigError('SMTP_TLS_CERT and SMTP_TLS_KEY are required for SMTP submission when NODE_ENV=production');
  }
  return {
    port,
    portTls,
    host: process.env.SMTP_HOST || '0.0.0.0',
    name: process.env.SMTP_NAME || os.hostname(),
    tlsCert,
    tlsKey,
    allowInsecureAuth: flag('SMTP_ALLOW_INSECURE_AUTH', false),
    maxConnectionsPerAddress: integer('SMTP_MAX_CONNECTIONS_PER_ADDRESS', 20, 1, 100_000),
    maxConnections: integer('SMTP_MAX_CONNECTIONS', 1000, 1, 1_000_000),
    authTimeoutSeconds: integer('SMTP_AUTH_TIMEOUT_SECONDS', 30, 1, 3600),
    idleTimeoutSeconds: integer('SMTP_IDLE_TIMEOUT_SECONDS', 300, 1, 3600),
    dataTimeoutSeconds: integer('SMTP_DATA_TIMEOUT_SECONDS', 300, 1, 3600),
    metricsPort: optionalPort('SMTP_METRICS_PORT'),
  };
}

export class ConfigError extends Error {}

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port,host:port` (an IPv6 address in brackets: `[::1]:26379`); empty means not set. */
export function parseHostList(name: string, raw: string | undefined, defaultPort: number): HostPort[] | null {
  const text = (raw ?? '').trim();
  if (text === '') return null;
  return text.split(',').map((entry) => {
    const item = entry.trim();
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+))(?::(\d+))?$/.exec(item);
    const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
    if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ConfigError(`${name} must be a comma-separated list of host:port, got "${item}"`);
    }
    return { host: match[1] ?? match[2]!, port };
  });
}

/** Names Express's `trust proxy` understands besides addresses and ranges. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: empty or `false` trusts no proxy (the connection's address is the client's); a whole number trusts that
 * many hops in front of the API; otherwise a comma-separated list of addresses, CIDR ranges or the names loopback,
 * linklocal, uniquelocal.
 */
export function parseTrustProxy(raw: string | undefined): false | number | string[] {
  const text = (raw ?? '').trim();
  if (text === '' || /^(false|no|off|none)$/i.test(text)) return false;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 10) throw new ConfigError(`TRUST_PROXY hop count must be at most 10, got "${raw}"`);
    return hops === 0 ? false : hops;
  }
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = net.isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (PROXY_NAMES.includes(entry)) continue;
    if (!family || !validBits || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY must be false, a hop count, or addresses, CIDR ranges and ${PROXY_NAMES.join('/')} separated by commas; "${entry}" is none of these`);
    }
  }
  return entries;
}

export function logLevel(): string {
  return process.env.LOG_LEVEL || (process.env.NODE_ENV === 'test' ? 'silent' : 'info');
}

function integer(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function positiveNumber(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > max) throw new ConfigError(`${name} must be a number above 0 and at most ${max}, got "${raw}"`);
  return value;
}

export const PARTITION_INTERVALS = ['day', 'week', 'month'] as const;
export type PartitionInterval = (typeof PARTITION_INTERVALS)[number];

function oneOf<T extends string>(name: string, fallback: T, values: readonly T[]): T {
  const raw = (process.env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${process.env[name]}"`);
  return raw as T;
}

function flag(name: string, fallback: boolean): boolean {
  const raw = (process.env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${process.env[name]}"`);
}

function url(name: string, fallback: string, protocols: string[]): string {
  const raw = process.env[name] || fallback;
  let parsed: URL;
  try {
    // a Postgres URL may list several hosts (failover/): each is checked as the first one is
    parsed = new URL(protocols.includes('postgresql:') ? firstHostUrl(raw) : raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => p + '//').join(' or ')}`);
  }
  return raw;
}

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

/** A DNS host name setting (SPF_INCLUDE, RETURN_PATH_HOST), lower case; empty when unset. */
function hostName(name: string): string {
  const raw = (process.env[name] ?? '').trim().toLowerCase().replace(/\.$/, '');
  if (raw !== '' && !/^(?=.{1,253}$)([a-z0-9_]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(raw)) throw new ConfigError(`${name} must be a host name, got "${raw}"`);
  return raw;
}

function verifyProbeConfig(): VerifyProbeConfig | null {
  const from = (process.env.VERIFY_PROBE_FROM ?? '').trim();
  const host = (process.env.VERIFY_PROBE_HOST ?? '').trim();
  if (!from && !host) return null;
  if (!from || !host) throw new ConfigError('the mailbox probe needs both VERIFY_PROBE_FROM and VERIFY_PROBE_HOST');
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(from)) throw new ConfigError(`VERIFY_PROBE_FROM must be an email address, got "${from}"`);
  if (net.isIP(host) === 0) throw new ConfigError(`VERIFY_PROBE_HOST must be an IP address of this host, got "${host}"`);
  return Object.freeze({ from, host, port: integer('VERIFY_PROBE_PORT', 25, 1, 65535), perMinute: integer('VERIFY_PROBE_PER_MINUTE', 6, 1, 600) });
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
    mx: mxConfig(),
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

function oidcConfig(): OidcConfig | null {
  const issuer = (process.env.OIDC_ISSUER ?? '').trim();
  if (!issuer) return null;
  if (!/^https?:\/\/[^\s]+$/.test(issuer)) throw new ConfigError(`OIDC_ISSUER must be the provider's issuer URL, got "${issuer}"`);
  const clientId = (process.env.OIDC_CLIENT_ID ?? '').trim();
  const clientSecret = process.env.OIDC_CLIENT_SECRET ?? '';
  if (!clientId || !clientSecret) throw new ConfigError('OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET');
  let raw: unknown;
  try {
    raw = JSON.parse(process.env.OIDC_ROLE_MAP || '{}');
  } catch {
    throw new ConfigError('OIDC_ROLE_MAP must be JSON: {"<claim value>": "operator" | "<account id>:<role>"}');
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError('OIDC_ROLE_MAP must be a JSON object from a claim value to a role');
  const roleMap = new Map<string, 'operator' | { account: number; role: 'owner' | 'admin' | 'sender' | 'viewer' }>();
  for (const [value, role] of Object.entries(raw as Record<string, unknown>)) {
    const grant = typeof role === 'string' ? /^(?:(operator)|([1-9]\d{0,9}):(owner|admin|sender|viewer))$/.exec(role) : null;
    if (!grant) throw new ConfigError(`OIDC_ROLE_MAP: "${value}" must map to "operator" or "<account id>:<owner|admin|sender|viewer>", got ${JSON.stringify(role)}`);
    roleMap.set(value, grant[1] ? 'operator' : Object.freeze({ account: Number(grant[2]), role: grant[3] as 'owner' }));
  }
  return Object.freeze({
    issuer,
    clientId,
    clientSecret,
    roleClaim: (process.env.OIDC_ROLE_CLAIM ?? '').trim() || 'groups',
    roleMap,
    scopes: (process.env.OIDC_SCOPES ?? '').trim() || 'openid email profile',
    label: (process.env.OIDC_LABEL ?? '').trim() || 'SSO',
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
