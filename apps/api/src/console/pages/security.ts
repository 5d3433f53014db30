import type { Request, RequestHandler, Response } from 'express';
import { listAccounts } from '../../../../core/src/accounts';
import { BadRequest } from '../../../../core/src/errors';
import { factorsOf, listPasskeys, registrationOptions, removePasskey, requireSecondFactor, startTotp, confirmTotp, disableTotp, addPasskey } from '../../../../core/src/second-factor';
import { can } from '../../../../core/src/teams';
import { idParam, validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { allowScript, relyingPartyOf } from '../passkey-script';
import { field, type ConsolePage, type PageContext } from '../page';
import { saveSession } from '../session';
import { CSRF_FIELD } from '../views';
import { SECOND_FACTOR_TEMPLATES } from './second-factor';

const CODE_INPUT = `<input name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" required>`;

/**
 * The console's Security page (docs/teams.md): a person's own second factor (an authenticator app with recovery codes,
 * passkeys), and for an owner (or an operator) whether each account requires one. A person an account requires it of
 * who has none is sent here before anything else (`enrolFirst`).
 */
export const securityPage: ConsolePage = {
  path: '/security',
  title: 'Security',
  templates: {
    ...SECOND_FACTOR_TEMPLATES,
    security: `<% if (!it.person) { %><p class="card">The admin token's session has no second factor of its own: sign in with your email to set one up.</p><% } else { %>
<% if (it.mustEnrol) { %><p class="error" role="alert" id="enrol-first">An account of yours requires a second factor: set one up before anything else.</p><% } %>
<section class="card"><h2>Authenticator app (TOTP)</h2>
<% if (it.factors.totp) { %><p id="totp-state">On. Recovery codes left: <%= it.factors.recovery_codes_left %>.</p>
<form method="post" action="/admin/security/totp/disable">${CSRF_FIELD}<label>A current code ${CODE_INPUT}</label><button>Turn off</button></form>
<% } else { %><p id="totp-state">Off.</p><form method="post" action="/admin/security/totp">${CSRF_FIELD}<button>Set up an authenticator app</button></form><% } %>
</section>
<section class="card"><h2>Passkeys</h2>
<table><thead><tr><th>Name</th><th>Added</th><th>Last used</th><th></th></tr></thead><tbody>
<% it.passkeys.forEach(function (p) { %><tr><td><%= p.name %></td><td><%= p.created_at %></td><td><%= p.last_used_at || '-' %></td>
<td><form method="post" action="/admin/security/passkeys/<%= encodeURIComponent(p.id) %>/remove" class="inline">${CSRF_FIELD}<button>Remove</button></form></td></tr><% }) %>
</tbody></table>
<% if (it.options) { %><form method="post" action="/admin/security/passkeys" data-passkey="register" data-options="<%= it.options %>">${CSRF_FIELD}
<input type="hidden" name="response" value=""><label>Name <input name="name" maxlength="100" value="Passkey"></label>
<button id="add-passkey">Add a passkey</button> <span class="passkey-status"></span></form><script src="/admin/static/passkeys.js" defer></script>
<% } else { %><p><%= it.passkeyNote %></p><% } %>
</section><% } %>
<% if (it.accounts.length) { %><section class="card"><h2>Accounts that require a second factor</h2>
<table><thead><tr><th>Account</th><th>Second factor</th><th></th></tr></thead><tbody>
<% it.accounts.forEach(function (a) { %><tr><td><%= a.id %> · <%= a.name %></td><td><%= a.required ? 'required' : 'optional' %></td>
<td><form method="post" action="/admin/users/second-factor" class="inline">${CSRF_FIELD}<input type="hidden" name="account" value="<%= a.id %>"><input type="hidden" name="required" value="<%= a.required ? 'no' : 'yes' %>"><button><%= a.required ? 'Stop requiring' : 'Require' %></button></form></td></tr><% }) %>
</tbody></table></section><% } %>`,
    'security-totp': `<section class="card"><h2>Set up an authenticator app</h2>
<% if (it.secret) { %><p>Add this to your authenticator app (this is the only time it is shown), then type the code it shows.</p>
<p>Key: <code class="copy" id="totp-secret"><%= it.secret %></code></p><p>Link: <span class="copy" id="totp-uri"><%= it.uri %></span></p><% } %>
<form method="post" action="/admin/security/totp/confirm">${CSRF_FIELD}<label>Code ${CODE_INPUT}</label><button>Confirm</button></form></section>`,
    'security-recovery': `<section class="card"><h2>Recovery codes</h2>
<p>Your authenticator app is on. Keep these ten codes somewhere safe: each signs you in once if the app is lost. They are shown only now.</p>
<ul id="recovery-codes"><% it.codes.forEach(function (c) { %><li><code><%= c %></code></li><% }) %></ul>
<p><a href="/admin/security">Done</a></p></section>`,
  },
  routes(router, ctx) {
    const show = async (req: Request, res: Response) => {
      const session = res.locals.session!;
      const user = session.user;
      const all = await listAccounts(ctx.db);
      const required = new Map((await ctx.db.account.findMany({ select: { id: true, requireSecondFactor: true } })).map((a) => [a.id, a.requireSecondFactor]));
      const accounts = all.filter((a) => !user || can(user, 'users.manage', a.id)).map((a) => ({ ...a, required: required.get(a.id) ?? false }));
      if (!user) return ctx.render(req, res, 'security', 'Security', { person: false, accounts });
      const rp = relyingPartyOf(req);
      const options = typeof rp === 'string' ? null : await registrationOptions(ctx.db, user, session.id, rp);
      if (options) allowScript(res);
      const [factors, passkeys] = await Promise.all([factorsOf(ctx.db, user.id), listPasskeys(ctx.db, user.id)]);
      ctx.render(req, res, 'security', 'Security', { person: true, mustEnrol: session.mustEnrol, factors, passkeys, accounts, options: options ? JSON.stringify(options) : null, passkeyNote: typeof rp === 'string' ? rp : '' });
    };
    const person = (res: Response) => {
      const user = res.locals.session?.user;
      if (!user) throw new BadRequest("the admin token's session has no second factor: sign in with your email");
      return user;
    };
    router.get('/security', show);
    router.post('/security/totp', async (req, res) => {
      const { secret, uri } = await startTotp(ctx.db, person(res), auditContext(req, res, 'console'));
      res.set('Cache-Control', 'no-store');
      ctx.render(req, res, 'security-totp', 'Authenticator app', { secret, uri });
    });
    router.post('/security/totp/confirm', async (req, res) => {
      const user = person(res);
      const codes = await confirmTotp(ctx.db, user.id, field(req, 'code'), auditContext(req, res, 'console')).catch((err: unknown) => err);
      if (codes instanceof Error) return ctx.render(req, res, 'security-totp', 'Authenticator app', { error: codes.message }, 400);
      res.set('Cache-Control', 'no-store');
      ctx.render(req, res, 'security-recovery', 'Recovery codes', { codes });
    });
    router.post('/security/totp/disable', async (req, res) => {
      await disableTotp(ctx.db, person(res).id, field(req, 'code'), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/security', 'The authenticator app is off; its recovery codes no longer work.');
    });
    router.post('/security/passkeys', async (req, res) => {
      const rp = relyingPartyOf(req);
      if (typeof rp === 'string') throw new BadRequest(rp);
      const passkey = await addPasskey(ctx.db, person(res).id, res.locals.session!.id, field(req, 'name'), field(req, 'response'), rp, auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/security', `Passkey ${passkey.name} added.`);
    });
    router.post('/security/passkeys/:id/remove', async (req, res) => {
      await removePasskey(ctx.db, person(res).id, String(req.params.id), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/security', 'Passkey removed.');
    });
    // the permission table gives /users to users.manage, in the account the form names
    router.post('/users/second-factor', async (req, res) => {
      const account = validate(idParam, field(req, 'account'));
      const required = field(req, 'required') === 'yes';
      await requireSecondFactor(ctx.db, account, required, auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/security', required ? `Account ${account} now requires a second factor.` : `Account ${account} no longer requires a second factor.`);
    });
  },
};

/** Open to a person who must still enrol: their Security page, signing out, the console's static files. */
const OPEN_TO_ENROL = /^\/(security(\/|$)|signout|static\/)/;

/**
 * A person one of whose accounts requires a second factor, and who has none, is sent to the Security page before
 * anything else: a page is redirected there, a form refused.
 */
export function enrolFirst(ctx: PageContext): RequestHandler {
  return (req, res, next) => {
    const session = res.locals.session;
    if (!session?.mustEnrol || OPEN_TO_ENROL.test(req.path)) return next();
    if (req.method === 'GET') {
      session.flash = 'An account of yours requires a second factor: set one up first.';
      return void saveSession(session).then(() => res.redirect(303, '/admin/security'), next);
    }
    ctx.render(req, res, 'error', 'Refused', { error: 'An account of yours requires a second factor: set one up on the Security page first.', back: '/admin/security' }, 403);
  };
}
