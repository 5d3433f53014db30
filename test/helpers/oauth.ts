import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { ApiApp } from '../../apps/api/src/app';
import { asAdmin } from './api';
import { launchDovecot, stopDovecot } from './dovecot';
import { makeAccount } from './factories';
import { ROOT } from './processes';
import { waitFor } from './wait';

export const CLIENT = { id: 'test-client', secret: 'test-secret' };

/**
 * The tests' OAuth2 authorization server: oauth2-mock-server in its own process (test/helpers/oauth-server.mjs), with
 * refresh tokens it remembers, rotates and refuses after a revocation, and an RFC 7662 introspection endpoint.
 */
export class AuthServer {
  url = '';
  private child: ChildProcess | undefined;

  async start(): Promise<this> {
    const child = spawn(process.execPath, [path.join(ROOT, 'test/helpers/oauth-server.mjs')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`the authorization server exited: ${err}`);
        return /listening \d+/.test(out);
      },
      { timeout: 60_000, what: 'the authorization server' },
    );
    this.url = `http://127.0.0.1:${/listening (\d+)/.exec(out)![1]}`;
    return this;
  }

  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  get authUrl(): string {
    return `${this.url}/authorize`;
  }

  private async control<T = { ok: boolean }>(what: string, body?: object): Promise<T> {
    const res = await fetch(`${this.url}/control/${what}`, body ? { method: 'POST', body: JSON.stringify(body) } : {});
    return (await res.json()) as T;
  }

  /** the account the next consent comes from, the lifetime of the next tokens (seconds), refresh-token rotation, a refused consent */
  set(settings: { login?: string; ttl?: number; rotate?: boolean; deny?: boolean; down?: boolean }) {
    return this.control('set', settings);
  }

  /** The account's owner withdraws consent: its refresh tokens answer invalid_grant, its access tokens are dead. */
  revoke(account: string) {
    return this.control('revoke', { account });
  }

  stats() {
    return this.control<{ refreshes: number; refused: number; unavailable: number; exchanges: number; introspections: number; grants: string[] }>('stats');
  }

  /** An access token for an account (the test's own IMAP logins). */
  async token(account: string): Promise<string> {
    return (await this.control<{ token: string }>('token', { account })).token;
  }

  /** RFC 7662 introspection, as a resource server asks. */
  async introspect(token: string): Promise<{ active: boolean; username?: string }> {
    const res = await fetch(`${this.url}/introspect`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });
    return (await res.json()) as { active: boolean; username?: string };
  }

  /** A refresh token issued through the real authorization-code exchange (with PKCE), for `account`. */
  async consent(account: string, redirect = 'http://127.0.0.1/cb'): Promise<string> {
    await this.set({ login: account });
    const verifier = 'v'.repeat(43) + Math.random().toString(36).slice(2);
    const { createHash } = await import('node:crypto');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const auth = new URL(this.authUrl);
    Object.entries({ response_type: 'code', client_id: CLIENT.id, redirect_uri: redirect, scope: 'mail', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }).forEach(([k, v]) =>
      auth.searchParams.set(k, v),
    );
    const res = await fetch(auth, { redirect: 'manual' });
    const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
    const token = await fetch(this.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: CLIENT.id, client_secret: CLIENT.secret, redirect_uri: redirect }),
    });
    return ((await token.json()) as { refresh_token: string }).refresh_token;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** A new account's OAuth2 mailbox `address`, created through the admin API with a refresh token `auth` issued for it. */
export async function adminOAuthMailbox(api: ApiApp, auth: AuthServer, address: string, smtp: string, extra: Record<string, unknown> = {}) {
  const account = await makeAccount();
  const refresh = await auth.consent(address);
  const res = await asAdmin(api)
    .post('/admin/api/mailboxes')
    .send({
      account: account.id,
      address,
      smtp,
      auth: { type: 'oauth2', provider: 'custom', client_id: CLIENT.id, client_secret: CLIENT.secret, refresh_token: refresh, token_url: auth.tokenUrl, scope: 'mail' },
      ...extra,
    });
  expect(res.status).toBe(201);
  return { account, refresh, mailbox: res.body.mailbox as { id: number; status: string } };
}

export interface OAuthMail {
  user: string;
  to: string[];
  parsed: ParsedMail;
}

/**
 * An SMTP server on loopback that takes XOAUTH2 only: each token is checked at the authorization server's introspection
 * endpoint and must name the login's account. A refused token gets XOAUTH2's JSON challenge, then 535, as Gmail does.
 */
export class XOAuthSmtp {
  readonly messages: OAuthMail[] = [];
  logins = 0;
  refusedLogins = 0;
  private server: SMTPServer;
  private port = 0;

  constructor(private readonly auth: AuthServer) {
    this.server = new SMTPServer({
      secure: false,
      disabledCommands: ['STARTTLS'],
      authMethods: ['XOAUTH2'],
      allowInsecureAuth: true,
      logger: false,
      onAuth: (login, _session, callback) => {
        if (login.method !== 'XOAUTH2' || !login.accessToken) return callback(new Error('XOAUTH2 only'));
        this.auth.introspect(login.accessToken).then(
          (answer) => {
            if (answer.active && answer.username === login.username) {
              this.logins++;
              return callback(null, { user: login.username });
            }
            this.refusedLogins++;
            callback(null, { data: { status: '401', schemes: 'bearer', scope: 'https://mail.google.com/' } });
          },
          (err: Error) => callback(err),
        );
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          simpleParser(Buffer.concat(chunks)).then((parsed) => {
            this.messages.push({ user: String(session.user), to: session.envelope.rcptTo.map((r) => r.address), parsed });
            callback();
          }, callback);
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** The mailbox's SMTP URL: the login name only, plain SMTP on loopback. */
  url(user: string): string {
    return `smtp://${encodeURIComponent(user)}@127.0.0.1:${this.port}?tls=off`;
  }

  to(address: string): OAuthMail[] {
    return this.messages.filter((m) => m.to.includes(address));
  }

  /** Ends every open session, as a provider does when consent is revoked: the next email needs a new login. */
  dropSessions(): void {
    for (const connection of (this.server as unknown as { connections: Set<{ close(): void }> }).connections) connection.close();
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Debian's dovecot on loopback whose only passdb is `oauth2`: every login (XOAUTH2 or OAUTHBEARER) is a token that
 * dovecot checks at the authorization server's introspection endpoint (POST, RFC 7662).
 */
export class OAuthDovecot {
  port = 0;
  private dir = '';

  async start(auth: AuthServer, account: string): Promise<this> {
    ({ dir: this.dir, port: this.port } = await launchDovecot('dovecot-oauth-', (dir) => ({
      mechanisms: 'xoauth2 oauthbearer',
      passdb: `driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = ${dir}/dovecot-oauth2.conf.ext`,
      files: {
        'dovecot-oauth2.conf.ext': `introspection_mode = post\nintrospection_url = ${auth.url}/introspect\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`,
      },
    })));
    await waitFor(
      async () => {
        const client = this.client(account, await auth.token(account));
        return client.connect().then(
          () => client.logout().then(() => true),
          () => false,
        );
      },
      { timeout: 20_000, interval: 200, what: 'dovecot with the oauth2 passdb' },
    );
    return this;
  }

  client(user: string, accessToken: string): ImapFlow {
    return new ImapFlow({ host: '127.0.0.1', port: this.port, secure: false, auth: { user, accessToken }, logger: false });
  }

  /** The mailbox's IMAP URL: the login name only. */
  url(user: string): string {
    return `imap://${encodeURIComponent(user)}@127.0.0.1:${this.port}`;
  }

  /** Puts a raw message in the user's INBOX (IMAP APPEND, logged in with a token of the authorization server). */
  async append(auth: AuthServer, user: string, raw: string): Promise<void> {
    const client = this.client(user, await auth.token(user));
    await client.connect();
    try {
      await client.append('INBOX', raw);
    } finally {
      await client.logout();
    }
  }

  log(): string {
    return fs.readFileSync(path.join(this.dir, 'log', 'dovecot.log'), 'utf8');
  }

  async stop(): Promise<void> {
    await stopDovecot(this.dir);
  }
}
