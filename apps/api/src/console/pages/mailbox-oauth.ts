import crypto from 'node:crypto';
import type { Request, RequestHandler, Response, Router } from 'express';
import { finishConnect, startConnect, startReconnect, ConnectRefused, type ConnectInput } from '../../../../core/src/oauth/connect';
import { OAUTH_PROVIDERS, type OAuthProvider } from '../../../../core/src/mailboxes/oauth-providers';
import { listAccounts } from '../../../../core/src/accounts';
import { idParam, validate } from '../../../../core/src/validate';
import { findMailbox } from '../../../../core/src/mailboxes';
import { auditContext, holdTo } from '../../middleware/audit';
import { viewScope, field, numberField, type PageContext } from '../page';
import { cookieValue, secureCookies, sessionExists } from '../session';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';

/**
 * The console's OAuth2 mailboxes (docs/mailboxes.md): "Connect a Google / Microsoft mailbox" and the reconnect banner's
 * button start the flow and show a link to the provider's consent page (the console's CSP lets forms post only here,
 * so the browser follows a link, not a form's redirect); the provider comes back to /admin/oauth/callback.
 *
 * The callback is reached by a cross-site redirect, which does not carry the SameSite=Strict session cookie: the flow
 * is bound to the session that started it in its stored state, and to this browser by a SameSite=Lax cookie of its own
 * (a random nonce, 10 minutes, only under /admin/oauth).
 */
export const FLOW_COOKIE = 'ms_oauth_flow';

/** The form of "Connect a Google / Microsoft mailbox" (its own page: the mailboxes page has its own address field). */
const CONNECT_FORM = `<form method="post" action="/admin/mailboxes/connect" class="card">${CSRF_FIELD}
<h2>Connect a Google / Microsoft mailbox</h2>
<p class="muted">Signs in with OAuth2 (XOAUTH2 for SMTP and IMAP): no password is kept, only a refresh token, encrypted. See docs/mailboxes.md for registering the app.</p>
${ACCOUNT_SELECT}
<label>Address <input name="address" type="email" required></label>
<label>Provider <select name="provider">${OAUTH_PROVIDERS.map((p) => `<option value="${p}">${p === 'google' ? 'Google Workspace / Gmail' : p === 'microsoft' ? 'Microsoft 365 / Outlook' : 'Other OAuth2 provider'}</option>`).join('')}</select></label>
<details><summary>App and servers (Other provider, or an app not set in the settings)</summary>
<label>Client id <input name="client_id" size="50"></label>
<label>Client key <input name="client_key" type="password" size="50" autocomplete="off"></label>
<label>Authorization URL <input name="auth_url" size="50" placeholder="https://provider.example/authorize"></label>
<label>Token URL <input name="token_url" size="50" placeholder="https://provider.example/token"></label>
<label>Scopes <input name="scope" size="50"></label>
<label>SMTP URL (login name only) <input name="smtp" size="50" placeholder="smtp://user@host:587"></label>
<label>IMAP URL (login name only) <input name="imap" size="50" placeholder="imaps://user@host:993"></label>
</details>
<button>Connect</button>
</form>`;

export const OAUTH_TEMPLATES = {
  'oauth-connect': `<p><a href="/admin/mailboxes">All mailboxes</a></p>
${CONNECT_FORM}`,
  'oauth-continue': `<section class="card">
<p>Sign in at <strong><%= it.provider %></strong> as <strong><%= it.address %></strong> and allow access to mail. You come back here afterwards.</p>
<p><a class="button" id="consent" href="<%= it.url %>">Continue to <%= it.provider %></a></p>
<p class="muted">The link works once, for 10 minutes, in this browser only.</p>
</section>`,
  'oauth-done': `<section class="card">
<p><%= it.message %></p>
<p><a href="/admin/mailboxes">Back to Mailboxes</a></p>
</section>`,
};

/** The link of the mailboxes page to the "Connect" page, and the banner of each mailbox that needs reconnecting. */
export const OAUTH_CONNECT_LINK = `<p class="card"><a class="button" href="/admin/mailboxes/connect">Connect a Google / Microsoft mailbox</a> <span class="muted">OAuth2: no password kept</span></p>`;



export const RECONNECT_BANNER = `<% it.mailboxes.filter(function (m) { return m.status === 'needs_reconnect'; }).forEach(function (m) { %>
<div class="error banner" role="alert"><strong><%= m.address %> needs reconnecting.</strong> <%= m.auth.provider %> refused its sign-in<%= m.disconnected ? ' on ' + m.disconnected.at + ' (' + m.disconnected.reason + ')' : '' %>. Its emails and outreach steps wait, none is lost; they go out once it is connected again.
<form method="post" action="/admin/mailboxes/<%= m.id %>/reconnect" class="inline">${CSRF_FIELD}<button>Reconnect</button></form></div>
<% }) %>`;

const optional = (req: Request, name: string) => field(req, name) || undefined;
const providerLabel = (p: OAuthProvider) => (p === 'google' ? 'Google' : p === 'microsoft' ? 'Microsoft' : 'the provider');

/** A nonce for this browser, set as the flow's Lax cookie. */
function bindBrowser(req: Request, res: Response): string {
  const nonce = crypto.randomBytes(24).toString('base64url');
  res.cookie(FLOW_COOKIE, nonce, { httpOnly: true, sameSite: 'lax', secure: secureCookies(req), path: '/admin/oauth', maxAge: 600_000 });
  return nonce;
}

export function mailboxOAuthRoutes(router: Router, ctx: PageContext): void {
  router.get('/mailboxes/connect', async (req, res) => {
    const accounts = await listAccounts(ctx.db, viewScope(res));
    ctx.render(req, res, 'oauth-connect', 'Connect a Google / Microsoft mailbox', { accounts, account: '' });
  });

  router.post('/mailboxes/connect', async (req, res) => {
    const provider = field(req, 'provider') as OAuthProvider;
    if (!OAUTH_PROVIDERS.includes(provider)) throw new ConnectRefused('Choose a provider.');
    const input: ConnectInput = {
      account: validate(idParam, String(numberField(req, 'account') ?? '')),
      provider,
      address: field(req, 'address'),
      client_id: optional(req, 'client_id'),
      // the app's client secret ("client key" on the page, which never shows a secret's name or value)
      client_secret: optional(req, 'client_key'),
      auth_url: optional(req, 'auth_url'),
      token_url: optional(req, 'token_url'),
      scope: optional(req, 'scope'),
      smtp: optional(req, 'smtp'),
      imap: optional(req, 'imap'),
    };
    const session = res.locals.session!;
    const { url } = await startConnect(input, { kind: 'console', session: session.id, nonce: bindBrowser(req, res), actor: auditContext(req, res, 'console').actor });
    ctx.render(req, res, 'oauth-continue', `Connect ${input.address}`, { url, provider: providerLabel(provider), address: input.address.toLowerCase() });
  });

  router.post('/mailboxes/:id/reconnect', async (req, res) => {
    const id = validate(idParam, req.params.id);
    holdTo(req, res, (await findMailbox(ctx.db, id)).accountId);
    const session = res.locals.session!;
    const { url, address } = await startReconnect(ctx.db, id, { kind: 'console', session: session.id, nonce: bindBrowser(req, res), actor: auditContext(req, res, 'console').actor });
    const m = await ctx.db.mailbox.findUniqueOrThrow({ where: { id } });
    ctx.render(req, res, 'oauth-continue', `Reconnect ${address}`, { url, provider: providerLabel((m.oauthProvider ?? 'custom') as OAuthProvider), address });
  });
}

/** GET /admin/oauth/callback: before the console's sign-in check (see above); the flow's own binding decides. */
export function oauthCallback(ctx: PageContext): RequestHandler {
  return async (req, res) => {
    const q = (name: string) => (typeof req.query[name] === 'string' ? (req.query[name] as string) : undefined);
    res.clearCookie(FLOW_COOKIE, { path: '/admin/oauth' });
    try {
      const done = await finishConnect(
        ctx.db,
        { state: q('state'), code: q('code'), error: q('error'), error_description: q('error_description') },
        { nonce: cookieValue(req, FLOW_COOKIE), sessionAlive: sessionExists, ip: req.ip ?? null, requestId: String(res.locals.requestId ?? '') || null },
      );
      const what = done.reconnected
        ? `${done.mailbox.address} is connected again. Its waiting emails are on their way.`
        : `${done.mailbox.address} is connected (mailbox ${done.mailbox.id}).`;
      ctx.render(req, res, 'oauth-done', 'Mailbox connected', { message: done.cli ? `${what} You can close this tab; the terminal shows the mailbox.` : what });
    } catch (err) {
      if (!(err instanceof ConnectRefused)) throw err;
      ctx.render(req, res, 'error', 'Not connected', { error: err.message, back: '/admin/mailboxes' }, 400);
    }
  };
}
