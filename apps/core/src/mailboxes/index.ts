import crypto from 'node:crypto';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import { encryptSecret } from '../crypto';
import { audited, type AuditContext } from '../audit';
import { afterCommit } from '../after-commit';
import type { Db, Tx } from '../db';
import { BadRequest, Conflict, NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { effectiveDailyLimit } from '../outreach/limits';
import { replanHeldSteps } from '../outreach/replan';
import { configuredClient, preset, type OAuthProvider } from '../oauth/providers';
import { releaseWaiting } from '../oauth/state';
import { forgetAccessToken } from '../oauth/tokens';
import { accountWhere, type AccountScope } from '../account-scope';
import { parseImapUrl, parseServerUrlPassword, parseSmtpUrl, smtpTlsOf, type SmtpTls } from './servers';

// what the worker connects and signs with, where its callers look for it
export { imapSettings, smtpSettings, type SmtpSettings } from './servers';

/** The mailbox columns of an imap URL; null or '' turns inbound reading off. */
function imapColumns(raw: string | null) {
  if (!raw) return { imapHost: null, imapPort: null, imapSecure: false, imapUser: '', imapPasswordEnc: '', inboundState: 'off', inboundError: null };
  const imap = parseImapUrl(raw);
  return {
    imapHost: imap.host,
    imapPort: imap.port,
    imapSecure: imap.secure,
    imapUser: imap.user,
    imapPasswordEnc: encryptSecret(imap.password, config().secretKey),
    inboundState: 'starting',
    inboundError: null,
  };
}

export interface MailboxView {
  id: number;
  account: number;
  address: string;
  name: string;
  /** `tls`: the URL's tls parameter (on when absent); `require_tls`: the login waits for STARTTLS */
  smtp: { host: string; port: number; secure: boolean; user: string; require_tls: boolean; tls: SmtpTls };
  daily_limit: number;
  gap_seconds: number;
  imap: { host: string; port: number; secure: boolean; user: string } | null;
  inbound: { state: string; last_error: string | null; checked_at: Date | null };
  max_per_second: number | null;
  dkim: { domain: string; selector: string } | null;
  /** the envelope sender: the mailbox's address, or VERP (docs/inbound.md) */
  return_path: string;
  /** docs/outreach.md: pacing and warm-up of outreach */
  gap_jitter: number;
  warmup: { start: number; step: number; since: string } | null;
  /** today's outreach cap: daily_limit, or less during a warm-up */
  effective_daily_limit: number;
  /** docs/campaigns.md: no outreach while paused (a rotation passes it over) */
  paused: boolean;
  /** how it signs in (docs/mailboxes.md); the client secret and the refresh token are never answered */
  auth: { type: 'password' } | { type: 'oauth2'; provider: string; client_id: string; token_url: string; auth_url: string | null; scope: string };
  /** `needs_reconnect`: the provider refused its refresh token; its mail waits until it is connected again */
  status: 'active' | 'needs_reconnect';
  disconnected: { at: string; reason: string } | null;
}

/** The answer shape: never the password, not even encrypted. */
export function mailboxView(m: Mailbox): MailboxView {
  return {
    id: m.id,
    account: m.accountId,
    address: m.address,
    name: m.name,
    smtp: { host: m.smtpHost, port: m.smtpPort, secure: m.smtpSecure, user: m.smtpUser, require_tls: !m.smtpSecure && m.smtpRequireTls, tls: smtpTlsOf(m) },
    daily_limit: m.dailyLimit,
    gap_seconds: m.gapSeconds,
    imap: m.imapHost ? { host: m.imapHost, port: m.imapPort!, secure: m.imapSecure, user: m.imapUser } : null,
    inbound: { state: m.inboundState, last_error: m.inboundError, checked_at: m.inboundCheckedAt },
    max_per_second: m.maxPerSecond,
    // the private key is never echoed, not even encrypted
    dkim: m.dkimDomain && m.dkimSelector ? { domain: m.dkimDomain, selector: m.dkimSelector } : null,
    return_path: m.returnPath,
    gap_jitter: m.gapJitter,
    warmup: m.warmupStart !== null && m.warmupSince ? { start: m.warmupStart, step: m.warmupStep ?? 0, since: m.warmupSince.toISOString() } : null,
    effective_daily_limit: effectiveDailyLimit(m),
    paused: m.paused,
    auth:
      m.authType === 'oauth2'
        ? { type: 'oauth2', provider: m.oauthProvider ?? 'custom', client_id: m.oauthClientId ?? '', token_url: m.oauthTokenUrl ?? '', auth_url: m.oauthAuthUrl, scope: m.oauthScope ?? '' }
        : { type: 'password' },
    status: m.authStatus === 'needs_reconnect' ? 'needs_reconnect' : 'active',
    disconnected: m.authStatus === 'needs_reconnect' && m.disconnectedAt ? { at: m.disconnectedAt.toISOString(), reason: m.disconnectReason ?? '' } : null,
  };
}

/** `auth` of POST/PATCH /admin/api/mailboxes (docs/mailboxes.md). */
export type AuthInput =
  | { type: 'password' }
  | { type: 'oauth2'; provider: OAuthProvider; client_id?: string; client_secret?: string; refresh_token?: string; token_url?: string; auth_url?: string; scope?: string };

/**
 * The OAuth2 columns of an `auth` (secrets encrypted); the preset's token URL and scopes, and the app configured in the
 * settings, fill what is not given. `current`: the mailbox's row on a change, whose refresh token and secret stay
 * unless new ones are given.
 */
function authColumns(auth: AuthInput, current?: Mailbox) {
  if (auth.type === 'password') {
    return {
      authType: 'password',
      oauthProvider: null,
      oauthClientId: null,
      oauthClientSecretEnc: null,
      oauthRefreshTokenEnc: null,
      oauthTokenUrl: null,
      oauthAuthUrl: null,
      oauthScope: null,
      authStatus: 'active',
      disconnectedAt: null,
      disconnectReason: null,
    };
  }
  const key = config().secretKey;
  const sameProvider = current?.authType === 'oauth2' && current.oauthProvider === auth.provider;
  const configured = configuredClient(auth.provider);
  const defaults = auth.provider === 'custom' ? null : preset(auth.provider);
  const clientId = auth.client_id || (sameProvider ? current.oauthClientId : null) || configured.clientId;
  if (!clientId) throw new BadRequest(`auth.client_id is required (or set OAUTH_${auth.provider.toUpperCase()}_CLIENT_ID)`);
  const tokenUrl = auth.token_url || (sameProvider ? current.oauthTokenUrl : null) || defaults?.tokenUrl;
  if (!tokenUrl) throw new BadRequest('auth.token_url is required with provider "custom"');
  const refreshEnc = auth.refresh_token ? encryptSecret(auth.refresh_token, key) : sameProvider ? current.oauthRefreshTokenEnc : null;
  if (!refreshEnc) throw new BadRequest('auth.refresh_token is required (connect the mailbox in the console, or with `mailbox connect`)');
  const secretEnc = auth.client_secret
    ? encryptSecret(auth.client_secret, key)
    : sameProvider && current.oauthClientSecretEnc
      ? current.oauthClientSecretEnc
      : configured.clientSecret
        ? encryptSecret(configured.clientSecret, key)
        : null;
  return {
    authType: 'oauth2',
    oauthProvider: auth.provider,
    oauthClientId: clientId,
    oauthClientSecretEnc: secretEnc,
    oauthRefreshTokenEnc: refreshEnc,
    oauthTokenUrl: tokenUrl,
    oauthAuthUrl: auth.auth_url || (sameProvider ? current.oauthAuthUrl : null) || defaults?.authUrl || null,
    oauthScope: auth.scope ?? (sameProvider ? current.oauthScope : null) ?? defaults?.scope ?? '',
    // a new refresh token is a reconnect: the mailbox is active again and its waiting mail is released
    ...(auth.refresh_token ? { authStatus: 'active', disconnectedAt: null, disconnectReason: null } : {}),
  };
}

/** With OAuth2 the URLs carry the login name only; a preset's servers are the default. */
function oauthServers(input: { address: string; smtp?: string; imap?: string | null }, auth: AuthInput | undefined) {
  if (auth?.type !== 'oauth2') return { smtp: input.smtp, imap: input.imap };
  for (const [name, raw] of [['smtp', input.smtp], ['imap', input.imap]] as const) {
    if (raw && parseServerUrlPassword(raw)) throw new BadRequest(`${name}: with auth oauth2 the URL carries no password (the access token signs in)`);
  }
  const defaults = auth.provider === 'custom' ? null : preset(auth.provider);
  return {
    smtp: input.smtp ?? defaults?.smtp(input.address),
    imap: input.imap === undefined ? defaults?.imap(input.address) : input.imap,
  };
}

export interface NewMailbox {
  account: number;
  address: string;
  name?: string;
  /** required with a password; with OAuth2 a preset's server is the default */
  smtp?: string;
  auth?: AuthInput;
  daily_limit?: number;
  gap_seconds?: number;
  imap?: string | null;
  max_per_second?: number | null;
  dkim?: DkimInput | null;
  return_path?: 'address' | 'verp';
  gap_jitter?: number;
  warmup?: { start: number; step: number } | null;
}

/** A warm-up counts its days from the moment it is set; null ends it. */
const warmupColumns = (warmup: { start: number; step: number } | null) =>
  warmup ? { warmupStart: warmup.start, warmupStep: warmup.step, warmupSince: new Date() } : { warmupStart: null, warmupStep: null, warmupSince: null };

export interface DkimInput {
  domain: string;
  selector: string;
  private_key: string;
}

/** The DKIM columns of a mailbox: the key checked as a PEM private key, then encrypted at rest; null clears them. */
function dkimColumns(dkim: DkimInput | null) {
  if (!dkim) return { dkimDomain: null, dkimSelector: null, dkimPrivateKeyEnc: null };
  try {
    crypto.createPrivateKey(dkim.private_key);
  } catch {
    throw new BadRequest('dkim.private_key must be a PEM private key');
  }
  return { dkimDomain: dkim.domain.toLowerCase(), dkimSelector: dkim.selector, dkimPrivateKeyEnc: encryptSecret(dkim.private_key, config().secretKey) };
}

/** Creates a mailbox, with its audit entry (the password never in it) in the same transaction. */
export async function createMailboxAudited(db: Db, input: NewMailbox, audit: AuditContext): Promise<MailboxView> {
  return audited(db, audit, { action: 'create', resource: 'mailbox', after: (m) => m }, (tx: Tx) => createMailbox(tx, input));
}

export async function createMailbox(db: Tx, input: NewMailbox): Promise<MailboxView> {
  const servers = oauthServers(input, input.auth);
  if (!servers.smtp) throw new BadRequest('smtp is required (a URL like smtp://user:password@host:587)');
  // with OAuth2 the login name is the address unless the URL names another
  const login = input.auth?.type === 'oauth2' ? input.address : undefined;
  const smtp = smtpColumns(servers.smtp, login);
  const imap = imapColumns(servers.imap ?? null);
  const auth = input.auth ? authColumns(input.auth) : {};
  await requireAccount(db, input.account);
  const address = input.address.toLowerCase();
  const existing = await db.mailbox.findUnique({ where: { accountId_address: { accountId: input.account, address } } });
  if (existing) throw new Conflict(`the account already has a mailbox ${address}`);
  const mailbox = await db.mailbox.create({
    data: {
      accountId: input.account,
      address,
      name: input.name ?? '',
      ...smtp,
      dailyLimit: input.daily_limit ?? 50,
      gapSeconds: input.gap_seconds ?? 60,
      ...imap,
      maxPerSecond: input.max_per_second ?? null,
      ...(input.dkim ? dkimColumns(input.dkim) : {}),
      returnPath: input.return_path ?? 'address',
      ...(input.gap_jitter !== undefined ? { gapJitter: input.gap_jitter } : {}),
      ...(input.warmup ? warmupColumns(input.warmup) : {}),
      ...auth,
    },
  });
  return mailboxView(mailbox);
}

export type MailboxChange = Partial<Pick<NewMailbox, 'auth' | 'name' | 'smtp' | 'daily_limit' | 'gap_seconds' | 'imap' | 'max_per_second' | 'dkim' | 'return_path' | 'gap_jitter' | 'warmup'>> & { paused?: boolean };

/** The SMTP columns of a URL (the password encrypted at rest). */
function smtpColumns(raw: string, oauthLogin?: string) {
  const smtp = parseSmtpUrl(raw);
  return {
    smtpHost: smtp.host,
    smtpPort: smtp.port,
    smtpSecure: smtp.secure,
    smtpUser: smtp.user || (oauthLogin ? oauthLogin.toLowerCase() : ''),
    smtpPasswordEnc: encryptSecret(smtp.password, config().secretKey),
    smtpRequireTls: smtp.requireTls,
    smtpTlsInsecure: smtp.tls === 'insecure',
  };
}

/**
 * PATCH /admin/api/mailboxes/:id: the fields given change (`imap`, `dkim` and `max_per_second`; null turns each off).
 * A refused change (bad URL or key, unknown id) changes nothing.
 */
export async function updateMailbox(db: Db, id: number, change: MailboxChange): Promise<MailboxView> {
  const current = await db.mailbox.findUnique({ where: { id } });
  if (!current) throw new NotFound(`no mailbox with id ${id}`);
  const servers = change;
  if ((change.auth?.type ?? current.authType) === 'oauth2') {
    for (const [name, raw] of [['smtp', change.smtp], ['imap', change.imap]] as const) {
      if (raw && parseServerUrlPassword(raw)) throw new BadRequest(`${name}: with auth oauth2 the URL carries no password (the access token signs in)`);
    }
  }
  const auth = change.auth ? authColumns(change.auth, current) : {};
  const data = {
    ...auth,
    ...(change.name !== undefined ? { name: change.name } : {}),
    ...(servers.smtp !== undefined ? smtpColumns(servers.smtp, (change.auth?.type ?? current.authType) === 'oauth2' ? current.address : undefined) : {}),
    ...(change.daily_limit !== undefined ? { dailyLimit: change.daily_limit } : {}),
    ...(change.gap_seconds !== undefined ? { gapSeconds: change.gap_seconds } : {}),
    ...(servers.imap !== undefined ? imapColumns(servers.imap) : {}),
    ...(change.max_per_second !== undefined ? { maxPerSecond: change.max_per_second } : {}),
    ...(change.dkim !== undefined ? dkimColumns(change.dkim) : {}),
    ...(change.return_path !== undefined ? { returnPath: change.return_path } : {}),
    ...(change.gap_jitter !== undefined ? { gapJitter: change.gap_jitter } : {}),
    ...(change.warmup !== undefined ? warmupColumns(change.warmup) : {}),
    ...(change.paused !== undefined ? { paused: change.paused } : {}),
  };
  const updated = Object.keys(data).length ? await db.mailbox.update({ where: { id }, data }) : current;
  if (current.authStatus === 'needs_reconnect' && updated.authStatus === 'active') await reconnected(db, id);
  // new OAuth2 settings (another refresh token, client or endpoint): the cached access token is not theirs
  else if (change.auth) await afterCommit(db, () => forgetAccessToken(id).catch(() => undefined));
  // steps held by the mailbox's cap or gap are planned again under the new limits (docs/outreach.md)
  const limits = [change.daily_limit, change.gap_seconds, change.gap_jitter, change.warmup];
  if (limits.some((l) => l !== undefined)) await replanHeldSteps(db, { mailboxId: id });
  return mailboxView(updated);
}

/** A mailbox connected again (a new refresh token, or back to a password): its waiting mail goes out, once. */
async function reconnected(db: Db, id: number): Promise<void> {
  await afterCommit(db, () => forgetAccessToken(id).catch(() => undefined));
  await releaseWaiting(db, id);
}

export async function listMailboxes(db: Tx, account?: AccountScope): Promise<MailboxView[]> {
  const rows = await db.mailbox.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return rows.map(mailboxView);
}

/** One mailbox row by id (whatever its account: the operator's read), or NotFound. */
export async function findMailbox(db: Tx, id: number): Promise<Mailbox> {
  const mailbox = await db.mailbox.findUnique({ where: { id } });
  if (!mailbox) throw new NotFound(`no mailbox with id ${id}`);
  return mailbox;
}

/** A mailbox of the account, or NotFound. */
export async function requireMailbox(db: Tx, account: number, id: number): Promise<Mailbox> {
  const mailbox = await db.mailbox.findFirst({ where: { id, accountId: account } });
  if (!mailbox) throw new NotFound(`no mailbox with id ${id} in account ${account}`);
  return mailbox;
}
