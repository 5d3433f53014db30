import type { Request, Response, Router } from 'express';
import { config } from '../../../../core/src/config';
import { AppError, NotFound, Unauthorized } from '../../../../core/src/errors';
import { grantedRoles, ssoUser, type ProviderAnswer, type Sso } from '../../../../core/src/sso';
import { clientOf } from '../../middleware/client';
import { refusalOf } from '../../middleware/errors';
import type { AuthFailures } from '../../middleware/failures';
import type { PageContext } from '../page';
import { cookieValue, secureCookies, signinToken, startPersonSession } from '../session';

/**
 * "Sign in with SSO" (docs/teams.md): /admin/sso/start sends the browser to the identity provider with a state, a nonce
 * and a PKCE challenge, bound to this browser by a SameSite=Lax cookie of its own (the provider's redirect back is a
 * top-level GET, which carries it); /admin/sso/callback checks the answer and starts the person's session.
 */
export const SSO_COOKIE = 'ms_sso_flow';
const COOKIE_PATH = '/admin/sso';

/** The redirect URI registered at the provider: PUBLIC_URL's /admin/sso/callback. */
export const ssoRedirectUri = () => `${config().publicUrl.replace(/\/$/, '')}/admin/sso/callback`;

export function ssoRoutes(router: Router, ctx: PageContext, sso: Sso | null, options: { failures: AuthFailures }): void {
  const refuse = (req: Request, res: Response, err: unknown) => {
    // every refused answer counts as a failed sign-in; its own words stay unless the address is now past its allowance
    const counted = err instanceof AppError && err.status < 500 ? options.failures.refuse(clientOf(req), new Unauthorized(err.message)) : null;
    const refusal = refusalOf(counted?.status === 429 ? counted : err, String(res.locals.requestId ?? ''), req);
    res.set(refusal.headers);
    ctx.render(req, res, 'signin', 'Sign in', { error: `Single sign-on: ${refusal.message}`, csrf: signinToken(req, res) }, refusal.status);
  };

  router.get('/sso/start', async (req, res) => {
    if (!sso) throw new NotFound('single sign-on is not set up here (OIDC_ISSUER)');
    const { url, browser } = await sso.start(ssoRedirectUri());
    res.cookie(SSO_COOKIE, browser, { httpOnly: true, sameSite: 'lax', secure: secureCookies(req), path: COOKIE_PATH, maxAge: 600_000 });
    res.redirect(303, url);
  });

  router.get('/sso/callback', async (req, res) => {
    if (!sso) throw new NotFound('single sign-on is not set up here (OIDC_ISSUER)');
    res.clearCookie(SSO_COOKIE, { path: COOKIE_PATH });
    const locked = options.failures.lockedOut(clientOf(req));
    if (locked) return refuse(req, res, locked);
    const answer = Object.fromEntries(Object.entries(req.query).filter(([, v]) => typeof v === 'string')) as ProviderAnswer;
    const audit = { via: 'console' as const, ip: req.ip ?? null, requestId: String(res.locals.requestId ?? '') || null };
    const userId = await sso
      .finish(answer, cookieValue(req, SSO_COOKIE), ssoRedirectUri())
      .then(({ identity, claims }) => ssoUser(ctx.db, identity, grantedRoles(claims, sso.settings), audit))
      .catch((err: unknown) => err);
    if (typeof userId !== 'number') return refuse(req, res, userId);
    res.locals.session = await startPersonSession(req, res, userId, clientOf(req), res.locals.session);
    const member = res.locals.session.user!;
    await ctx.redirect(req, res, '/admin', `Signed in as ${member.email} through ${sso.settings.label}.`);
  });
}
