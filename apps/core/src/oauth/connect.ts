import crypto from 'node:crypto';
import { config } from '../config';
import { decryptSecret, encryptSecret, safeEqual } from '../crypto';
import { audited, type AuditActor } from '../audit';
import type { Db } from '../db';
import { BadRequest } from '../errors';
import { createMailbox, mailboxView, writeMailboxChange, type MailboxView } from '../mailboxes';
import { redis, rkey } from '../redis';
import { signInChanged } from './reconnect';
import { accountOfIdToken, OAuthGrantRefused, OAuthUnavailable, tokenRequest } from './client';
import { callbackUrl, configuredClient, preset, type OAuthProvider } from '../mailboxes/oauth-providers';

/**
 * "Connect a Google / Microsoft mailbox" (docs/mailboxes.md): the authorization-code flow with PKCE (S256). `startConnect`
 * keeps the flow in Redis (encrypted, 10 minutes, single use) under a random `state` and answers the consent URL;
 * the provider sends the browser back to PUBLIC_URL/admin/oauth/callback, where `finishConnect` checks the state and its
 * binding (the console session and a cookie of the browser that started it, or the CLI's wait), exchanges the code,
 * checks the account, and creates the mailbox or stores the new refresh token (a reconnect releases its waiting mail).
 */

export interface ConnectInput {
  account: number;
  provider: OAuthProvider;
  address: string;
  name?: string;
  /** the mailbox to reconnect (else the account's mailbox with this address, or a new one) */
  mailbox?: number;
  client_id?: string;
  client_secret?: string;
  /** custom provider: its endpoints and scopes, and the mailbox's servers (login name only) */
  auth_url?: string;
  token_url?: string;
  scope?: string;
  smtp?: string;
  imap?: string | null;
}

/** Who may finish the flow: the console session that started it (with its browser's cookie), or the CLI. */
/** Who started the flow (the console's person or admin token, the CLI's admin token): the audit entry's actor. */
export type FlowBinding = ({ kind: 'console'; session: string; nonce: string } | { kind: 'cli' }) & { actor?: AuditActor };

interface Flow {
  input: ConnectInput;
  clientId: string;
  clientSecret: string;
  tokenUrl: string;
  authUrl: string;
  scope: string;
  verifier: string;
  binding: FlowBinding;
}

const FLOW_TTL_SECONDS = 600;
const flowKey = (state: string) => rkey('oauth', 'flow', state);
const resultKey = (state: string) => rkey('oauth', 'result', state);

/**
 * A reconnect of a mailbox that signs in with OAuth2 (the console's banner button, the CLI): the flow of its provider,
 * app and endpoints as stored, for the same address.
 */
export async function startReconnect(db: Db, mailboxId: number, binding: FlowBinding): Promise<{ url: string; state: string; address: string }> {
  const m = await db.mailbox.findUnique({ where: { id: mailboxId } });
  if (!m) throw new ConnectRefused(`No mailbox with id ${mailboxId}.`);
  if (m.authType !== 'oauth2') throw new ConnectRefused(`Mailbox ${m.address} signs in with a password, not OAuth2.`);
  const started = await startConnect(
    {
      account: m.accountId,
      provider: (m.oauthProvider ?? 'custom') as OAuthProvider,
      address: m.address,
      mailbox: m.id,
      client_id: m.oauthClientId ?? undefined,
      client_secret: m.oauthClientSecretEnc ? decryptSecret(m.oauthClientSecretEnc, config().secretKey) : undefined,
      auth_url: m.oauthAuthUrl ?? undefined,
      token_url: m.oauthTokenUrl ?? undefined,
      scope: m.oauthScope ?? undefined,
    },
    binding,
  );
  return { ...started, address: m.address };
}

/** A refusal of the flow in words, for the console's page and the CLI. */
export class ConnectRefused extends BadRequest {}

/** Starts a flow: the consent URL to send the browser to, and its state. */
export async function startConnect(input: ConnectInput, binding: FlowBinding): Promise<{ url: string; state: string }> {
  const configured = configuredClient(input.provider);
  const defaults = input.provider === 'custom' ? null : preset(input.provider);
  const clientId = input.client_id || configured.clientId;
  const clientSecret = input.client_secret || configured.clientSecret;
  if (!clientId) throw new ConnectRefused(`No client id for ${defaults?.label ?? 'the provider'}: give one, or set OAUTH_${input.provider.toUpperCase()}_CLIENT_ID (docs/mailboxes.md).`);
  const authUrl = input.auth_url || defaults?.authUrl;
  const tokenUrl = input.token_url || defaults?.tokenUrl;
  if (!authUrl || !tokenUrl) throw new ConnectRefused('A custom provider needs its authorization URL and token URL.');
  for (const [name, raw] of [['authorization URL', authUrl], ['token URL', tokenUrl]]) {
    if (!/^https?:\/\//i.test(raw!) || !URL.canParse(raw!)) throw new ConnectRefused(`The ${name} must be an http(s) URL.`);
  }
  if (!input.address || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(input.address)) throw new ConnectRefused('The mailbox address must be an email address.');
  const scope = input.scope ?? defaults?.scope ?? '';
  const state = crypto.randomBytes(32).toString('base64url');
  const verifier = crypto.randomBytes(48).toString('base64url');
  const flow: Flow = { input: { ...input, address: input.address.toLowerCase() }, clientId, clientSecret, tokenUrl, authUrl, scope, verifier, binding };
  await redis().set(flowKey(state), encryptSecret(JSON.stringify(flow), config().secretKey), 'EX', FLOW_TTL_SECONDS);
  const url = new URL(authUrl);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: callbackUrl(),
    scope,
    state,
    code_challenge: crypto.createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    login_hint: flow.input.address,
    ...(defaults?.authParams ?? {}),
  };
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  return { url: url.href, state };
}

export interface CallbackQuery {
  state?: string;
  code?: string;
  error?: string;
  error_description?: string;
}

export interface Connected {
  mailbox: MailboxView;
  /** an existing mailbox got its new refresh token (and its waiting mail was released) */
  reconnected: boolean;
  cli: boolean;
}

/**
 * The provider's answer at the callback. `check`: what the request carries of its binding (the console session it
 * came with, the cookie nonce). Every refusal is a ConnectRefused in words; the flow is used once whatever happens.
 */
export async function finishConnect(
  db: Db,
  query: CallbackQuery,
  check: { session?: string; nonce?: string; sessionAlive: (id: string) => Promise<boolean>; ip?: string | null; requestId?: string | null },
): Promise<Connected> {
  const state = query.state ?? '';
  const sealed = state ? await redis().getdel(flowKey(state)) : null;
  if (!sealed) {
    throw new ConnectRefused('State mismatch: this answer does not belong to a sign-in started here, or it was already used or has expired (10 minutes). Start again from Mailboxes.');
  }
  const flow = JSON.parse(decryptSecret(sealed, config().secretKey)) as Flow;
  const label = flow.input.provider === 'custom' ? 'the provider' : preset(flow.input.provider).label;
  if (flow.binding.kind === 'console') {
    const sameBrowser = !!check.nonce && safeEqual(check.nonce, flow.binding.nonce);
    if (!sameBrowser || !(await check.sessionAlive(flow.binding.session))) {
      throw new ConnectRefused('State mismatch: this answer belongs to a sign-in started in another browser or console session (or that session has ended). Nothing was changed; start again from Mailboxes.');
    }
  }
  const cli = flow.binding.kind === 'cli';
  let outcome: Omit<Connected, 'cli'>;
  try {
    outcome = await exchange(db, flow, query, label);
    // the mailbox is made (or its waiting emails released) once committed: its audit entry follows, by who started it
    const actor = flow.binding.actor ?? { kind: 'admin-token' as const, label: 'admin token' };
    const context = { actor, via: cli ? ('cli' as const) : ('console' as const), ip: cli ? null : (check.ip ?? null), requestId: check.requestId ?? null };
    const change = { action: outcome.reconnected ? 'reconnect' : 'create', resource: 'mailbox', id: outcome.mailbox.id, account: flow.input.account, after: () => outcome.mailbox };
    await audited(db, context, change, () => Promise.resolve(outcome));
  } catch (err) {
    // the CLI waiting for this flow ends with the same words
    if (cli) await redis().set(resultKey(state), JSON.stringify({ ok: false, error: (err as Error).message }), 'EX', FLOW_TTL_SECONDS);
    throw err;
  }
  if (cli) await redis().set(resultKey(state), JSON.stringify({ ok: true, mailbox: outcome.mailbox, reconnected: outcome.reconnected }), 'EX', FLOW_TTL_SECONDS);
  return { ...outcome, cli };
}

async function exchange(db: Db, flow: Flow, query: CallbackQuery, label: string): Promise<Omit<Connected, 'cli'>> {
  if (query.error) {
    if (query.error === 'access_denied') {
      throw new ConnectRefused(`Consent refused: access was declined at ${label}${query.error_description ? ` (${query.error_description})` : ''}. Nothing was changed; connect again and allow access to mail.`);
    }
    throw new ConnectRefused(`${label} answered ${query.error}${query.error_description ? `: ${query.error_description}` : ''}. Nothing was changed.`);
  }
  if (!query.code) throw new ConnectRefused(`${label} sent no authorization code back. Nothing was changed; start again.`);
  let answer;
  try {
    answer = await tokenRequest(flow.tokenUrl, { clientId: flow.clientId, clientSecret: flow.clientSecret }, {
      grant_type: 'authorization_code',
      code: query.code,
      code_verifier: flow.verifier,
      redirect_uri: callbackUrl(),
    });
  } catch (err) {
    if (err instanceof OAuthGrantRefused || err instanceof OAuthUnavailable) {
      throw new ConnectRefused(`${label} refused the authorization code (${err.message}). Nothing was changed; start again.`);
    }
    throw err;
  }
  const signedIn = accountOfIdToken(answer.idToken);
  if (signedIn && signedIn !== flow.input.address) {
    throw new ConnectRefused(`Wrong account: you signed in at ${label} as ${signedIn}, but this mailbox is ${flow.input.address}. Nothing was changed; connect again and choose ${flow.input.address}.`);
  }
  if (!answer.refreshToken) {
    throw new ConnectRefused(`${label} gave no refresh token, so the mailbox could not stay signed in. Remove this app's access in the account's security settings and connect again.`);
  }
  const auth = {
    type: 'oauth2' as const,
    provider: flow.input.provider,
    client_id: flow.clientId,
    ...(flow.clientSecret ? { client_secret: flow.clientSecret } : {}),
    refresh_token: answer.refreshToken,
    token_url: flow.tokenUrl,
    auth_url: flow.authUrl,
    scope: flow.scope,
  };
  const existing = flow.input.mailbox
    ? await db.mailbox.findFirst({ where: { id: flow.input.mailbox, accountId: flow.input.account } })
    : await db.mailbox.findUnique({ where: { accountId_address: { accountId: flow.input.account, address: flow.input.address } } });
  if (existing) {
    if (existing.address !== flow.input.address) throw new ConnectRefused(`Wrong account: mailbox ${existing.id} is ${existing.address}, not ${flow.input.address}.`);
    const { before, after } = await writeMailboxChange(db, existing.id, { auth });
    await signInChanged(db, before, after, true);
    return { mailbox: mailboxView(after), reconnected: true };
  }
  const mailbox = await createMailbox(db, {
    account: flow.input.account,
    address: flow.input.address,
    name: flow.input.name,
    auth,
    ...(flow.input.smtp ? { smtp: flow.input.smtp } : {}),
    ...(flow.input.imap !== undefined ? { imap: flow.input.imap } : {}),
  });
  return { mailbox, reconnected: false };
}

/** The CLI's wait: the flow's outcome once the callback finished it (or refused it), or null while it has not. */
export async function connectResult(state: string): Promise<{ ok: true; mailbox: MailboxView; reconnected: boolean } | { ok: false; error: string } | null> {
  const raw = await redis().get(resultKey(state));
  return raw ? (JSON.parse(raw) as { ok: true; mailbox: MailboxView; reconnected: boolean } | { ok: false; error: string }) : null;
}
