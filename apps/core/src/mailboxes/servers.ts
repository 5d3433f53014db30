/**
 * A mailbox's SMTP and IMAP servers: their URLs as an operator writes them, parsed and checked, the columns they are
 * kept in (the password encrypted), and the settings the worker connects with (the password decrypted).
 */
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import { BadRequest } from '../errors';

export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  password: string;
  /** a plain connection must be upgraded (STARTTLS) before the password is sent; `?tls=off` says otherwise */
  requireTls: boolean;
  /** `?tls=off`: plain SMTP, no STARTTLS even when the server offers it; `?tls=insecure`: TLS with any certificate */
  tls: SmtpTls;
}

/** The URL's `tls` parameter: absent (`on`: TLS when offered, certificates checked), `off` or `insecure`. */
export type SmtpTls = 'on' | 'off' | 'insecure';

/** `<scheme>://user:pass@host:port` (STARTTLS when offered) or `<scheme>s://...` (TLS), with the scheme's default ports. */
function parseServerUrl(raw: string, scheme: 'smtp' | 'imap', ports: { plain: number; tls: number }): SmtpSettings {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BadRequest(`${scheme} must be a URL like ${scheme}://user:password@host:${ports.plain}`);
  }
  if (url.protocol !== `${scheme}:` && url.protocol !== `${scheme}s:`) {
    throw new BadRequest(`${scheme} must start with ${scheme}:// or ${scheme}s://`);
  }
  if (!url.hostname) throw new BadRequest(`${scheme} must name a host`);
  const secure = url.protocol === `${scheme}s:`;
  const port = url.port ? Number(url.port) : secure ? ports.tls : ports.plain;
  if (port < 1) throw new BadRequest(`${scheme} must name a port from 1 to 65535`);
  const params = [...url.searchParams.keys()];
  const known = scheme === 'smtp' ? 'tls=off or tls=insecure' : 'tls=off';
  const unknown = params.find((p) => p !== 'tls');
  if (unknown !== undefined) throw new BadRequest(`${scheme}: unknown URL parameter "${unknown}" (only ${known} is known)`);
  const given = url.searchParams.getAll('tls');
  const allowed = scheme === 'smtp' ? ['off', 'insecure'] : ['off'];
  if (given.length > 1 || (given.length === 1 && !allowed.includes(given[0]!))) {
    throw new BadRequest(
      scheme === 'smtp'
        ? 'smtp: tls may only be "off" (plain SMTP, no STARTTLS: for a local relay) or "insecure" (TLS that accepts any certificate)'
        : `${scheme}: tls may only be "off" (send the login without STARTTLS, for a local server)`,
    );
  }
  const tls = (given[0] ?? 'on') as SmtpTls;
  if (tls === 'off' && secure) throw new BadRequest(`${scheme}: tls=off contradicts ${scheme}s://, which is TLS from the start`);
  return {
    requireTls: tls !== 'off',
    tls,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    secure,
    user: decodeUserinfo(url.username, 'user name', scheme),
    password: decodeUserinfo(url.password, 'password', scheme),
  };
}

/** `smtp://user:pass@host:port` (STARTTLS when offered, default port 587) or `smtps://...` (TLS, default 465). */
export const parseSmtpUrl = (raw: string): SmtpSettings => parseServerUrl(raw, 'smtp', { plain: 587, tls: 465 });

/** `imap://user:pass@host:port` (STARTTLS when offered, default 143) or `imaps://...` (TLS, default 993). */
export function parseImapUrl(raw: string): SmtpSettings {
  const imap = parseServerUrl(raw, 'imap', { plain: 143, tls: 993 });
  if (!imap.user) throw new BadRequest('imap must name a user');
  return imap;
}

function decodeUserinfo(text: string, what: string, scheme: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new BadRequest(`${scheme}: the ${what} has a bad %-escape (write % as %25)`);
  }
}

/** Whether a URL carries a password (an OAuth2 mailbox's URLs must not). */
export function parseServerUrlPassword(raw: string): boolean {
  try {
    return new URL(raw).password !== '';
  } catch {
    return false;
  }
}

/** The columns a server's settings are kept in, named with its prefix (smtpHost, imapUser...): the password encrypted. */
type Kept<P extends 'smtp' | 'imap'> = { [K in 'Host' | 'User' | 'PasswordEnc' as `${P}${K}`]: string } & { [K in `${P}Port`]: number } & { [K in `${P}Secure`]: boolean };

function kept<P extends 'smtp' | 'imap'>(prefix: P, server: SmtpSettings): Kept<P> {
  const columns = { Host: server.host, Port: server.port, Secure: server.secure, User: server.user, PasswordEnc: encryptSecret(server.password, config().secretKey) };
  return Object.fromEntries(Object.entries(columns).map(([name, value]) => [`${prefix}${name}`, value])) as Kept<P>;
}

/** The SMTP columns of a URL; with OAuth2 (`oauthLogin`) the login name is the address unless the URL names another. */
export function smtpColumns(raw: string, oauthLogin?: string) {
  const smtp = parseSmtpUrl(raw);
  return {
    ...kept('smtp', { ...smtp, user: smtp.user || (oauthLogin ? oauthLogin.toLowerCase() : '') }),
    smtpRequireTls: smtp.requireTls,
    smtpTlsInsecure: smtp.tls === 'insecure',
  };
}

/** The IMAP columns of a URL; null or '' turns inbound reading off. */
export function imapColumns(raw: string | null) {
  if (!raw) return { imapHost: null, imapPort: null, imapSecure: false, imapUser: '', imapPasswordEnc: '', inboundState: 'off', inboundError: null };
  return { ...kept('imap', parseImapUrl(raw)), inboundState: 'starting', inboundError: null };
}

export const smtpTlsOf = (m: Mailbox): SmtpTls => (m.smtpTlsInsecure ? 'insecure' : m.smtpRequireTls || m.smtpSecure ? 'on' : 'off');

/** SMTP settings with the password decrypted, for the worker's transport only. */
export function smtpSettings(m: Mailbox): SmtpSettings {
  return {
    host: m.smtpHost,
    port: m.smtpPort,
    secure: m.smtpSecure,
    user: m.smtpUser,
    password: decryptSecret(m.smtpPasswordEnc, config().secretKey),
    requireTls: m.smtpRequireTls,
    tls: smtpTlsOf(m),
  };
}

/** IMAP settings with the password decrypted, for the worker's inbound reader only. */
export function imapSettings(m: Mailbox): SmtpSettings | null {
  if (!m.imapHost) return null;
  return { host: m.imapHost, port: m.imapPort!, secure: m.imapSecure, user: m.imapUser, password: decryptSecret(m.imapPasswordEnc, config().secretKey), requireTls: false, tls: 'on' };
}
