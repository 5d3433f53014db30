import { labelCells } from './cards';
import { createReads, type Reads } from '../../../core/src/replicas';
import express, { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import { config } from '../../../core/src/config';
import { safeEqual } from '../../../core/src/crypto';
import type { Db } from '../../../core/src/db';
import { Unauthorized } from '../../../core/src/errors';
import { refusalOf } from '../middleware/errors';
import type { ConsolePage, PageContext } from './page';
import { accountsPage } from './pages/accounts';
import { broadcastsPage } from './pages/broadcasts';
import { templatesPage } from './pages/templates';
import { campaignsPage } from './pages/campaigns';
import { inboundPage } from './pages/inbound';
import { mxPage } from './pages/mx';
import { sandboxPage } from './pages/sandbox';
import { keysPage } from './pages/keys';
import { listsPage } from './pages/lists';
import { mailboxesPage } from './pages/mailboxes';
import { oauthCallback } from './pages/mailbox-oauth';
import { messagesPage } from './pages/messages';
import type { EmailKinds } from '../../../core/src/delivery/kinds';
import { overviewPage } from './pages/overview';
import { webhooksPage } from './pages/webhooks';
import { domainsPage } from './pages/domains';
import { trackingDomainsPage } from './pages/tracking-domains';
import type { BodyBudget } from '../middleware/body-budget';
import { clientOf } from '../middleware/client';
import type { AuthFailures } from '../middleware/failures';
import { can, permissionFor, signIn, signOutUser, type Member } from '../../../core/src/teams';
import { auditContext } from '../middleware/audit';
import { accountOfPath } from '../../../core/src/changes/owners';
import { accountOf } from '../middleware/admin';
import { usersPage, teamsStrangerRoutes } from './pages/users';
import { auditPage } from './pages/audit';
import { enrolFirst, securityPage } from './pages/security';
import { SECOND_FACTOR_PATH, secondFactorRoutes } from './pages/second-factor';
import { ssoRoutes } from './pages/sso';
import { createSso } from '../../../core/src/sso';
import { suppressionsPage } from './pages/suppressions';
import { subscribersPage } from './pages/subscribers';
import { csrfMatches, endSession, loadSession, saveSession, signedIn as isSignedIn, signinToken, signinTokenMatches, startPersonSession, startSession, type Session } from './session';
import { COPY_SCRIPT, holdsCopies } from './copy-script';
import { allowScript } from './passkey-script';
import { CSS, FORM_LIMIT, FORM_LIMIT_TEXT, createViews } from './views';

/** The console's pages, in navigation order. A new page: a module in pages/ and one line here. */
export const PAGES: ConsolePage[] = [overviewPage, accountsPage, usersPage, mailboxesPage, keysPage, listsPage, subscribersPage, suppressionsPage, broadcastsPage, templatesPage, campaignsPage, messagesPage, webhooksPage, inboundPage, mxPage, domainsPage, sandboxPage, trackingDomainsPage, auditPage, securityPage];

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      session?: Session;
    }
  }
}

/** No script at all, no inline style, nothing from another origin; forms post only here. */
const securityHeaders = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
      // the template editor's preview: a sandboxed frame of the console's own origin (pages/templates.ts)
      frameSrc: ["'self'"],
    },
  },
  strictTransportSecurity: false,
  referrerPolicy: { policy: 'same-origin' },
});

/**
 * The admin console of docs/operator.md at /admin: server-rendered pages over the same core services as the admin API,
 * behind a session started with the admin token. Every POST carries the session's CSRF token; pages work without
 * JavaScript (there is none).
 */
/** The console's one multipart form: a list's import file. */
const UPLOAD_PATH = /^\/lists\/\d+\/upload$/;

export function consoleRouter(db: Db, bodies: { budget: BodyBudget; signInBudget: BodyBudget; failures: AuthFailures }, kinds: EmailKinds, reads: Reads = createReads(db, null)): Router {
  const router = Router();
  const views = createViews(Object.assign({}, ...PAGES.map((p) => p.templates)) as Record<string, string>);
  const oidc = config().oidc;
  const sso = oidc ? createSso(oidc) : null;
  // a signed-in admin's forms are read within the API's body budget; anybody else's (the sign-in) within the sign-in's
  // own small one, and at most 4 KB; 1,500 fields hold the editors' rows (a campaign's 20 steps and blank ones, each
  // with its ten A/B variants: step-form.ts)
  const form = bodies.budget.around(express.urlencoded({ extended: false, limit: FORM_LIMIT, parameterLimit: 1500 }));
  const strangerForm = bodies.signInBudget.around(express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 }));

  const render: PageContext['render'] = (req, res, template, title, data = {}, status = 200) => {
    const session = res.locals.session;
    const signedIn = isSignedIn(session);
    const user = session?.user;
    const flash = session?.flash;
    if (flash && session) {
      delete session.flash;
      void saveSession(session).catch(() => undefined);
    }
    const csrf = signedIn ? session.csrf : typeof data.csrf === 'string' ? data.csrf : '';
    const page = { ...data, csrf, sso: sso?.settings.label ?? null };
    const rendered = views.render(`@${template}`, page);
    const body = labelCells(user ? withoutForbiddenForms(rendered, user) : rendered);
    // long values get a copy button from the console's own script (copy-script.ts): only such pages allow it
    const copies = holdsCopies(body);
    if (copies) allowScript(res);
    const nav = signedIn
      ? PAGES.filter((p) => !user || can(user, p.permission ?? 'read')).map((p) => ({ href: `/admin${p.path === '/' ? '' : p.path}`, title: p.title, current: req.path === p.path || (p.path !== '/' && req.path.startsWith(`${p.path}/`)) }))
      : null;
    res
      .status(status)
      .set({ 'Cache-Control': 'no-store' })
      .type('html')
      .send(views.render('@layout', { title, body, nav, flash, error: data.error, csrf, queues: !user || user.operator, who: user ? user.email : null, copies }));
  };
  const redirect: PageContext['redirect'] = async (_req, res, to, flash) => {
    const session = res.locals.session!;
    session.flash = flash;
    await saveSession(session);
    res.redirect(303, to);
  };
  const ctx: PageContext = { db, reads, kinds, render, redirect };

  // what falls through the admin API and the queue dashboard keeps their JSON 404, not a console page
  router.use((req, _res, next) => next(/^\/(api|queues)(\/|$)/.test(req.path) ? 'router' : undefined));
  router.use(securityHeaders);
  router.get('/static/console.css', (_req, res) => {
    res.type('css').set('Cache-Control', 'public, max-age=3600').send(CSS);
  });
  router.get('/static/copy.js', (_req, res) => {
    res.type('js').set('Cache-Control', 'public, max-age=3600').send(COPY_SCRIPT);
  });

  const withSession: RequestHandler = async (req, res, next) => {
    const session = await loadSession(req);
    // only signed-in sessions are stored now; one of an older version, from before sign-in, counts as none
    if (isSignedIn(session)) res.locals.session = session;
    next();
  };
  router.use(withSession);

  router.get('/signin', (req, res) => {
    if (res.locals.session) return res.redirect(303, '/admin');
    render(req, res, 'signin', 'Sign in', { csrf: signinToken(req, res) });
  });

  // every POST: the form's CSRF token must be the session's (the sign-in form's: of its nonce cookie)
  const checkCsrf: RequestHandler = (req, res, next) => {
    const session = res.locals.session;
    const given = (req.body as Record<string, unknown> | undefined)?._csrf;
    const matches = session ? csrfMatches(session, given) : STRANGER_FORMS.test(req.path) && signinTokenMatches(req, given);
    if (!matches) {
      return render(req, res, 'error', 'Refused', { error: 'The form is stale or did not come from this console (CSRF token missing or wrong). Reload the page and try again.', back: consoleBack(req) }, 403);
    }
    next();
  };
  router.use((req, res, next) => {
    if (req.method !== 'POST') return next();
    // a signed-in file upload streams its own body and checks the CSRF token, its first part (pages/lists.ts)
    if (res.locals.session && UPLOAD_PATH.test(req.path) && req.is('multipart/form-data')) return next();
    (res.locals.session ? form : strangerForm)(req, res, (err?: unknown) => {
      // a signed-in form over the limit (a long paste into the import box): the console's own limit, and the way round it
      if (res.locals.session && (err as { type?: string } | undefined)?.type === 'entity.too.large') {
        const list = /^\/lists\/(\d+)\//.exec(req.path)?.[1];
        const error = `The form is over the console's limit of ${FORM_LIMIT_TEXT}.${list ? ' Import a file of that size instead: the file upload takes up to 100 MB.' : ''}`;
        return render(req, res, 'error', 'Too large', { error, back: list ? `/admin/lists/${list}#upload` : '/admin' }, 413);
      }
      return err ? next(err) : checkCsrf(req, res, next);
    });
  });

  router.post('/signin', async (req, res) => {
    const token = typeof req.body?.token === 'string' ? (req.body.token as string) : '';
    // an address past its allowance is refused before the token is compared (failures.ts)
    const locked = bodies.failures.lockedOut(clientOf(req));
    const email = typeof req.body?.email === 'string' ? (req.body.email as string).trim() : '';
    if (email) {
      const password = typeof req.body?.password === 'string' ? (req.body.password as string) : '';
      const member = locked ? null : await signIn(db, email, password);
      if (!member) {
        const refusal = locked ?? bodies.failures.refuse(clientOf(req), new Unauthorized('Wrong email or password.'));
        if (refusal.status === 429) res.set(refusal.headers);
        const error = refusal.status === 429 ? 'Too many failed sign-ins from this address; try again in a minute.' : refusal.message;
        return render(req, res, 'signin', 'Sign in', { error, email, csrf: signinToken(req, res) }, refusal.status);
      }
      const session = await startPersonSession(req, res, member.id, clientOf(req), res.locals.session);
      if (session.pending) return res.redirect(303, SECOND_FACTOR_PATH);
      res.locals.session = session;
      return redirect(req, res, '/admin', `Signed in as ${member.email}.`);
    }
    if (locked || !safeEqual(token, config().adminToken)) {
      const refusal = locked ?? bodies.failures.refuse(clientOf(req), new Unauthorized('That is not the admin token.'));
      if (refusal.status === 429) res.set(refusal.headers);
      const error = refusal.status === 429 ? 'Too many failed sign-ins from this address; try again in a minute.' : refusal.message;
      return render(req, res, 'signin', 'Sign in', { error, csrf: signinToken(req, res) }, refusal.status);
    }
    // a new session id on sign-in: a session planted before it is worth nothing after
    const session = await startSession(req, res, res.locals.session);
    res.locals.session = session;
    await redirect(req, res, '/admin', 'Signed in.');
  });

  // invitations and password resets: pages for people not signed in (pages/users.ts)
  teamsStrangerRoutes(router, ctx, { failures: bodies.failures });
  // the second factor after the password (pages/second-factor.ts)
  secondFactorRoutes(router, ctx, { failures: bodies.failures });
  // single sign-on: for people not signed in yet (pages/sso.ts)
  ssoRoutes(router, ctx, sso, { failures: bodies.failures });

  // the provider's redirect back carries no SameSite=Strict session cookie: the flow's own binding is checked
  router.get('/oauth/callback', oauthCallback(ctx));

  const signedIn: RequestHandler = (req, res, next) => {
    if (isSignedIn(res.locals.session)) return next();
    if (req.method === 'GET') return res.redirect(303, '/admin/signin');
    render(req, res, 'error', 'Sign in first', { error: 'Your session has ended: sign in again.', back: '/admin/signin' }, 401);
  };
  router.use(signedIn);
  router.use(enrolFirst(ctx));

  router.post('/signout', async (_req, res) => {
    await endSession(res, res.locals.session!);
    res.redirect(303, '/admin/signin');
  });

  router.post('/signout-everywhere', async (req, res) => {
    const session = res.locals.session!;
    // a person's every session ends, audited (sign-out-everywhere, with the count); the admin token's console has one
    if (session.user) await signOutUser(db, session.user.id, session.user, { ...auditContext(req, res, 'console'), refuses: undefined });
    await endSession(res, session);
    res.redirect(303, '/admin/signin');
  });

  // a person's page or form needs the permission the one table gives its path (teams/permissions.ts), as in the admin
  // API: in the account the form names, else in the account of the row the path names (a page by id), else in any
  router.use(async (req, res, next) => {
    const user = res.locals.session?.user;
    if (!user) return next();
    const permission = permissionFor(req.method, req.path);
    const account = accountOf(req) ?? (user.operator ? undefined : await accountOfPath(db, req.path));
    if (can(user, permission, account)) return next();
    render(req, res, 'error', 'Refused', { error: `Your role does not allow this: needs ${permission}${account === undefined ? '' : ` in account ${account}`}.`, back: consoleBack(req) }, 403);
  });

  for (const page of PAGES) page.routes(router, ctx);

  // the API's one error mapper (middleware/errors.ts refusalOf) decides the status, headers and words; shown as a page
  router.use(((err, req, res, _next) => {
    const refusal = refusalOf(err, String(res.locals.requestId ?? ''), req);
    if (res.headersSent) return;
    res.set(refusal.headers);
    render(req, res, 'error', pageTitle(refusal.status), { error: refusal.message, back: consoleBack(req) }, refusal.status);
  }) as ErrorRequestHandler);
  return router;
}

/** The forms a signed-in person sees and sends: stranger pages' posts (sign-in, invitation, reset) are checked by their nonce cookie. */
const STRANGER_FORMS = /^\/(signin(\/second-factor(\/passkey)?)?|invite\/[A-Za-z0-9_-]+|reset(\/[A-Za-z0-9_-]+)?)$/;

/**
 * A page as a person sees it: every form that posts to a path their role may not change is left out, decided by the
 * one permission table from the form's action (so no page template repeats the rule).
 */
function withoutForbiddenForms(html: string, user: Member): string {
  return html.replace(/<form\b[^>]*>[\s\S]*?<\/form>/g, (form) => {
    const open = /^<form\b[^>]*>/.exec(form)![0];
    if (!/\bmethod="post"/i.test(open)) return form;
    const action = /\baction="\/admin([^"?]*)/.exec(open)?.[1];
    return action === undefined || can(user, permissionFor('POST', action)) ? form : '';
  });
}

/** An error page's title: what kind of refusal it is (its words are the mapper's). */
function pageTitle(status: number): string {
  if (status === 404) return 'Not found';
  if (status === 503) return 'Briefly unavailable';
  return status >= 500 ? 'Internal error' : 'Refused';
}

/** Back to the page of the resource the failed request was about. */
/** The console page a refusal links back to, from the request's own path: never a header (a Referer) made into a link. */
function consoleBack(req: Request): string {
  const first = req.path.split('/')[1] ?? '';
  return PAGES.some((p) => p.path === `/${first}`) ? `/admin/${first}` : '/admin';
}

export type { Response };
