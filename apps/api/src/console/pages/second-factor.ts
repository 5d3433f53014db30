import type { Request, Response, Router } from 'express';
import { Unauthorized } from '../../../../core/src/errors';
import { authenticationOptions, checkSignInCode, codeRefusal, factorsOf, verifyPasskey } from '../../../../core/src/second-factor';
import { clientOf } from '../../middleware/client';
import { refusalOf } from '../../middleware/errors';
import type { AuthFailures } from '../../middleware/failures';
import { allowScript, PASSKEY_SCRIPT, relyingPartyOf } from '../passkey-script';
import { field, type PageContext } from '../page';
import { loadSession, signinToken, startPersonSession, type Session } from '../session';
import { CSRF_FIELD } from '../views';

export const SECOND_FACTOR_PATH = '/admin/signin/second-factor';

export const SECOND_FACTOR_TEMPLATES = {
  'second-factor': `<% if (it.totp) { %><form method="post" action="${SECOND_FACTOR_PATH}" class="card">${CSRF_FIELD}
<h2>Code from your authenticator app</h2>
<label>Code (6 digits, or one of your recovery codes) <input name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus maxlength="20"></label>
<button id="second-factor-code">Continue</button>
</form><% } %>
<% if (it.options) { %><form method="post" action="${SECOND_FACTOR_PATH}/passkey" class="card" data-passkey="authenticate" data-options="<%= it.options %>">${CSRF_FIELD}
<h2>Passkey</h2><input type="hidden" name="response" value="">
<button id="second-factor-passkey">Use a passkey</button> <span class="passkey-status"></span>
</form><script src="/admin/static/passkeys.js" defer></script><% } else if (it.passkeyNote) { %><p class="card"><%= it.passkeyNote %></p><% } %>
<p><a href="/admin/signin">Start again</a></p>`,
};

/**
 * The second factor after the password (docs/teams.md): a person with TOTP or a passkey gets a pending session at
 * sign-in, which opens nothing but these pages until a code, a recovery code or a passkey is given; then a new
 * session replaces it. A wrong or reused code and a refused passkey count in the one failed-authentication rule.
 */
export function secondFactorRoutes(router: Router, ctx: PageContext, options: { failures: AuthFailures }): void {
  router.get('/static/passkeys.js', (_req, res) => {
    res.type('js').set('Cache-Control', 'public, max-age=3600').send(PASSKEY_SCRIPT);
  });

  const pendingOf = async (req: Request): Promise<Session | null> => {
    const session = await loadSession(req);
    return session?.pending && session.user ? session : null;
  };

  const show = async (req: Request, res: Response, session: Session, extra: Record<string, unknown> = {}, status = 200) => {
    const factors = await factorsOf(ctx.db, session.user!.id);
    const rp = relyingPartyOf(req);
    const passkeyOptions = factors.passkeys > 0 && typeof rp !== 'string' ? await authenticationOptions(ctx.db, session.user!.id, session.id, rp) : null;
    if (passkeyOptions) allowScript(res);
    ctx.render(req, res, 'second-factor', 'Second factor', {
      totp: factors.totp,
      options: passkeyOptions ? JSON.stringify(passkeyOptions) : null,
      passkeyNote: factors.passkeys > 0 && typeof rp === 'string' ? rp : null,
      csrf: signinToken(req, res),
      ...extra,
    }, status);
  };

  const refuse = async (req: Request, res: Response, session: Session, err: unknown) => {
    // a wrong code or passkey counts like a wrong password; past the allowance the address gets 429
    const counted = err instanceof Unauthorized ? options.failures.refuse(clientOf(req), err) : err;
    const refusal = refusalOf(counted, String(res.locals.requestId ?? ''), req);
    res.set(refusal.headers);
    const error = refusal.status === 429 ? 'Too many failed sign-ins from this address; try again in a minute.' : refusal.message;
    await show(req, res, session, { error }, refusal.status);
  };

  const done = async (req: Request, res: Response, session: Session) => {
    // a new session id once the second factor is given: the pending one's token is worth nothing after
    res.locals.session = await startPersonSession(req, res, session.user!.id, clientOf(req), session, { secondFactorDone: true });
    await ctx.redirect(req, res, '/admin', `Signed in as ${session.user!.email}.`);
  };

  router.get('/signin/second-factor', async (req, res) => {
    const session = await pendingOf(req);
    if (!session) return res.redirect(303, '/admin/signin');
    await show(req, res, session);
  });

  /** A form of the pending session: `given` answers null when the factor is right, else the refusal (counted). */
  const factorForm = (given: (req: Request, session: Session) => Promise<unknown>) => async (req: Request, res: Response) => {
    const session = await pendingOf(req);
    if (!session) return res.redirect(303, '/admin/signin');
    const locked = options.failures.lockedOut(clientOf(req));
    const failed = locked ?? (await given(req, session));
    if (failed) return refuse(req, res, session, failed);
    await done(req, res, session);
  };

  router.post(
    '/signin/second-factor',
    factorForm(async (req, session) => {
      const check = await checkSignInCode(ctx.db, session.user!.id, field(req, 'code'));
      return check === 'ok' ? null : codeRefusal(check);
    }),
  );

  router.post(
    '/signin/second-factor/passkey',
    factorForm(async (req, session) => {
      const rp = relyingPartyOf(req);
      if (typeof rp === 'string') return new Unauthorized(rp);
      return verifyPasskey(ctx.db, session.user!.id, session.id, field(req, 'response'), rp).then(() => null, (err: unknown) => err);
    }),
  );
}
