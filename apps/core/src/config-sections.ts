/**
 * The configuration's sections with a shape of their own, each read from its variables: SMTP submission
 * (docs/smtp.md), the MX (docs/mx.md), tracking domains (docs/tracking-domains.md), the mailbox probe
 * (docs/verification.md) and SSO with OpenID Connect (docs/teams.md).
 */
import net from 'node:net';
import os from 'node:os';
import { ConfigError, flag, hostName, integer, positiveNumber, url } from './config-values';

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
  /**
   * MX_REQUIRE_MX_RECORD: an inbound domain's mail is taken only once a check found its MX record (docs/mx.md); on by
   * default in production, off elsewhere (a developer's MX on localhost, with no public record)
   */
  readonly requireMxRecord: boolean;
}

export function mxConfig(env: string): MxConfig {
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
    requireMxRecord: flag('MX_REQUIRE_MX_RECORD', env === 'production'),
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

export function trackingConfig(publicUrl: string): TrackingConfig {
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

export function smtpConfig(env: string): SmtpConfig {
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

export function verifyProbeConfig(): VerifyProbeConfig | null {
  const from = (process.env.VERIFY_PROBE_FROM ?? '').trim();
  const host = (process.env.VERIFY_PROBE_HOST ?? '').trim();
  if (!from && !host) return null;
  if (!from || !host) throw new ConfigError('the mailbox probe needs both VERIFY_PROBE_FROM and VERIFY_PROBE_HOST');
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(from)) throw new ConfigError(`VERIFY_PROBE_FROM must be an email address, got "${from}"`);
  if (net.isIP(host) === 0) throw new ConfigError(`VERIFY_PROBE_HOST must be an IP address of this host, got "${host}"`);
  return Object.freeze({ from, host, port: integer('VERIFY_PROBE_PORT', 25, 1, 65535), perMinute: integer('VERIFY_PROBE_PER_MINUTE', 6, 1, 600) });
}

export function oidcConfig(): OidcConfig | null {
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
