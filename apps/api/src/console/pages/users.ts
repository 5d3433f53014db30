import type { Request, Response, Router } from 'express';
import { listAccounts } from '../../../../core/src/accounts';
import { NotFound, Unauthorized, type LimitReached } from '../../../../core/src/errors';
import { changeRole, checkLink, createUser, listUsers, removeUser, requestPasswordReset, ROLES, setPasswordByLink, signOutUser, type Changer } from '../../../../core/src/teams';
import { userChange, userInput } from '../../../../core/src/teams/schema';
import { idParam, validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { refusalOf } from '../../middleware/errors';
import { clientOf } from '../../middleware/client';
import type { AuthFailures } from '../../middleware/failures';
import { startPersonSession, signinToken } from '../session';
import { CSRF_FIELD } from '../views';
import { SECOND_FACTOR_PATH } from './second-factor';
import { viewScope, field, numberField, type ConsolePage, type PageContext } from '../page';

const ROLE_SELECT = `<select name="role" required>${ROLES.map((r) => `<option value="${r}">${r}</option>`).join('')}</select>`;
const OPTIONAL_ACCOUNT = `<select name="account"><option value="">(none: operator)</option><% it.accounts.forEach(function (a) { %><option value="<%= a.id %>"><%= a.id %> · <%= a.name %></option><% }) %></select>`;

/** Who changes something through the console: the person signed in, or the admin token's session. */
const changer = (res: Response): Changer => res.locals.session?.user ?? 'admin-token';

/** The console's Users page (docs/teams.md): invite, change a role, remove, sign a user out everywhere. */
export const usersPage: ConsolePage = {
  path: '/users',
  title: 'Users',
  permission: 'users.manage',
  templates: {
    users: `<% if (it.invite) { %><section class="card"><h2>Invitation for <%= it.invite.user.email %></h2>
<p><%= it.invite.emailed ? 'Emailed to them. ' : 'No mailbox could email it: send them the link. ' %>The link works for 7 days.</p><p class="copy" id="invite-url"><%= it.invite.invite_url %></p></section><% } %>
<table><thead><tr><th>Id</th><th>Email</th><th>Name</th><th>Roles</th><th>Password</th><th></th></tr></thead><tbody>
<% it.users.forEach(function (u) { %><tr><td><%= u.id %></td><td><%= u.email %></td><td><%= u.name %></td>
<td><%= u.operator ? 'operator' : '' %><% u.roles.forEach(function (r) { %> <%= r.role %> of <%= r.account %><% }) %></td><td><%= u.has_password ? 'set' : 'invited' %></td>
<td><form method="post" action="/admin/users/<%= u.id %>/role" class="inline">${CSRF_FIELD}${ROLE_SELECT.replace('<option value="operator">operator</option>', '<option value="operator">operator</option><option value="none">none</option>')} ${OPTIONAL_ACCOUNT}<button>Set role</button></form>
<form method="post" action="/admin/users/<%= u.id %>/signout" class="inline">${CSRF_FIELD}<button>Sign out everywhere</button></form>
<form method="post" action="/admin/users/<%= u.id %>/remove" class="inline">${CSRF_FIELD}<button>Remove</button></form></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/users" class="card">${CSRF_FIELD}
<h2>Invite a user</h2>
<label>Email <input name="email" type="email" required maxlength="254"></label>
<label>Name <input name="name" required maxlength="200"></label>
<label>Role ${ROLE_SELECT}</label>
<label>Account ${OPTIONAL_ACCOUNT}</label>
<button>Invite</button>
</form>`,
    'set-password': `<form method="post" action="<%= it.action %>" class="card">${CSRF_FIELD}
<p>For <strong><%= it.email %></strong>: at least 12 characters, not one of the common passwords.</p>
<label>Password <input type="password" name="password" autocomplete="new-password" minlength="12" maxlength="200" required autofocus></label>
<button>Set password</button>
</form>`,
    'reset-request': `<% if (it.sent) { %><p class="card">If that address has an account, a link to choose a new password is on its way (it works for one hour).</p><% } else { %><form method="post" action="/admin/reset" class="card">${CSRF_FIELD}
<label>Email <input type="email" name="email" autocomplete="username" required autofocus></label>
<button>Email me a link</button>
</form><% } %>`,
  },
  routes(router, ctx) {
    const show = async (req: Request, res: Response, extra: Record<string, unknown> = {}, status?: number) => {
      const [users, accounts] = await Promise.all([listUsers(ctx.db, changer(res)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'users', 'Users', { users, accounts, ...extra }, status);
    };
    router.get('/users', (req, res) => show(req, res));
    router.post('/users', async (req, res) => {
      const input = validate(userInput, { email: field(req, 'email'), name: field(req, 'name'), role: field(req, 'role'), account: numberField(req, 'account') });
      const invite = await createUser(ctx.db, input, changer(res), auditContext(req, res, 'console'));
      // the link is shown in this answer only (no redirect)
      res.set('Cache-Control', 'no-store');
      await show(req, res, { invite }, 201);
    });
    router.post('/users/:id/role', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const user = await changeRole(ctx.db, id, validate(userChange, { role: field(req, 'role'), account: numberField(req, 'account') }), changer(res), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/users', `Roles of ${user.email} changed.`);
    });
    router.post('/users/:id/signout', async (req, res) => {
      const count = await signOutUser(ctx.db, validate(idParam, req.params.id), changer(res), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/users', `${count} session(s) ended.`);
    });
    router.post('/users/:id/remove', async (req, res) => {
      const user = await removeUser(ctx.db, validate(idParam, req.params.id), changer(res), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/users', `User ${user.email} removed.`);
    });
  },
};

/**
 * The pages of people not signed in: an invitation's and a reset link's "choose your password", and "forgot your
 * password". A link that does not exist counts as a failed authentication (failures.ts): links are guessed like tokens.
 */
export function teamsStrangerRoutes(router: Router, ctx: PageContext, options: { failures: AuthFailures }): void {
  const refuse = (req: Request, res: Response, err: unknown) => {
    // a link that does not exist counts as a failure: its words stay, unless the address is now past its allowance
    const counted = err instanceof NotFound ? lockedOrSame(options.failures.refuse(clientOf(req), new Unauthorized(err.message)), err) : err;
    const refusal = refusalOf(counted, String(res.locals.requestId ?? ''), req);
    res.set(refusal.headers);
    ctx.render(req, res, 'error', 'Refused', { error: refusal.message, back: '/admin/signin' }, refusal.status);
  };
  for (const kind of ['invite', 'reset'] as const) {
    const title = kind === 'invite' ? 'Accept your invitation' : 'Choose a new password';
    router.get(`/${kind}/:token`, async (req, res) => {
      const locked = options.failures.lockedOut(clientOf(req));
      if (locked) return refuse(req, res, locked);
      const user = await checkLink(ctx.db, kind, req.params.token!).catch((err: unknown) => err);
      if (user instanceof Error) return refuse(req, res, user);
      ctx.render(req, res, 'set-password', title, { email: (user as { email: string }).email, action: `/admin/${kind}/${req.params.token}`, csrf: signinToken(req, res) });
    });
    router.post(`/${kind}/:token`, async (req, res) => {
      const locked = options.failures.lockedOut(clientOf(req));
      if (locked) return refuse(req, res, locked);
      const token = req.params.token!;
      const link = await checkLink(ctx.db, kind, token).catch((err: unknown) => err);
      if (link instanceof Error) return refuse(req, res, link);
      const userId = await setPasswordByLink(ctx.db, kind, token, field(req, 'password'), { via: 'console', ip: req.ip ?? null, requestId: String(res.locals.requestId ?? '') || null }).catch((err: unknown) => err);
      if (userId instanceof Error) {
        const refusal = refusalOf(userId, String(res.locals.requestId ?? ''), req);
        return ctx.render(req, res, 'set-password', title, { email: (link as { email: string }).email, action: `/admin/${kind}/${token}`, error: refusal.message, csrf: signinToken(req, res) }, refusal.status);
      }
      const session = await startPersonSession(req, res, userId as number, clientOf(req), res.locals.session);
      // a reset does not skip the second factor
      if (session.pending) return res.redirect(303, SECOND_FACTOR_PATH);
      res.locals.session = session;
      await ctx.redirect(req, res, '/admin', kind === 'invite' ? 'Welcome: your password is set.' : 'Your password is changed; every other session has ended.');
    });
  }
  router.get('/reset', (req, res) => ctx.render(req, res, 'reset-request', 'Forgot your password', { csrf: signinToken(req, res) }));
  router.post('/reset', async (req, res) => {
    await requestPasswordReset(ctx.db, field(req, 'email'));
    ctx.render(req, res, 'reset-request', 'Forgot your password', { sent: true });
  });
}

const lockedOrSame = (refusal: Unauthorized | LimitReached, err: NotFound) => (refusal.status === 429 ? refusal : err);
