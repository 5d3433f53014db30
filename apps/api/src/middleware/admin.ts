import type { Request, RequestHandler, Response } from 'express';
import { config } from '../../../core/src/config';
import { safeEqual } from '../../../core/src/crypto';
import type { Db } from '../../../core/src/db';
import { Forbidden, Unauthorized } from '../../../core/src/errors';
import type { AccountScope } from '../../../core/src/account-scope';
import { can, loadUserSession, permissionFor, USER_SESSION, type Changer, type Permission } from '../../../core/src/teams';
import { accountOfPath, accountOfRow } from '../../../core/src/changes/owners';
import { clientOf } from './client';
import type { AuthFailures } from './failures';

/** The admin token as `Authorization: Bearer <token>`, or as the password of basic auth (for the dashboard in a browser). */
function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * The admin token, checked before anything else of the request (its body included); a missing or wrong token counts
 * as a failure of the client's address, and an address past its allowance gets 429 unchecked (failures.ts).
 */
export function requireAdmin(failures: AuthFailures, options: { challenge?: boolean } = {}): RequestHandler {
  return (req, res, next) => {
    const locked = failures.lockedOut(clientOf(req));
    if (locked) throw locked;
    const token = presentedToken(req.get('authorization'));
    if (token && safeEqual(token, config().adminToken)) return next();
    if (options.challenge) res.set('WWW-Authenticate', 'Basic realm="mailservice admin", charset="UTF-8"');
    throw failures.refuse(clientOf(req), new Unauthorized(token ? 'the admin token is wrong' : 'the admin token is missing: send Authorization: Bearer <ADMIN_TOKEN>'));
  };
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** who the admin API's request is from: a person signed in to the console, or the admin token */
      actor?: Changer;
      /** the permission the admin API's request needs (`permitted`), held again on the account of the row it changes */
      permission?: Permission;
    }
  }
}

/** The console's session cookie (console/session.ts COOKIE), read here without importing the console. */
function sessionCookie(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'ms_console') return rest.join('=');
  }
  return undefined;
}

/** The origins the console is served on: the request's own, and PUBLIC_URL's. */
function sameOrigin(req: Request, origin: string): boolean {
  return origin === `${req.protocol}://${req.get('host')}` || origin === new URL(config().publicUrl).origin;
}

/**
 * The admin API's door (docs/teams.md): the admin token (for automation), or a person's console session cookie from
 * the console's own origin (`Origin` checked on every change). A person's permissions are checked by `permitted`.
 */
export function requireAdminOrMember(db: Db, failures: AuthFailures): RequestHandler {
  const token = requireAdmin(failures);
  return async (req, res, next) => {
    const cookie = req.get('authorization') ? undefined : sessionCookie(req);
    if (!cookie || !USER_SESSION.test(cookie)) {
      res.locals.actor = 'admin-token';
      return token(req, res, next);
    }
    const locked = failures.lockedOut(clientOf(req));
    if (locked) throw locked;
    const origin = req.get('origin');
    const reads = req.method === 'GET' || req.method === 'HEAD';
    if ((!reads || origin) && !(origin && sameOrigin(req, origin))) throw new Forbidden('a session may call the admin API only from the console (Origin missing or another origin)');
    const session = await loadUserSession(db, cookie);
    if (!session) throw failures.refuse(clientOf(req), new Unauthorized('your session has ended: sign in again'));
    if (session.pending) throw new Unauthorized('finish signing in first: your second factor is still to come');
    if (session.mustEnrol) throw new Forbidden("an account of yours requires a second factor: set one up on the console's Security page first");
    res.locals.actor = session.member;
    next();
  };
}

/** A number named by the request as `account` (body or query), if any. */
export function accountOf(req: Request): number | undefined {
  const raw = (req.body as Record<string, unknown> | undefined)?.account ?? req.query.account;
  const account = Number(raw);
  return raw !== undefined && raw !== '' && Number.isInteger(account) && account > 0 ? account : undefined;
}

/**
 * A person's request must hold the permission the one table gives it (teams/permissions.ts), in the account it names
 * (else in one of theirs): otherwise 403 "needs <permission>". The admin token holds every permission.
 */
export const permitted: RequestHandler = (req, res, next) => {
  const actor = res.locals.actor;
  if (!actor || actor === 'admin-token') return next();
  const permission = permissionFor(req.method, req.path);
  if (!can(actor, permission, accountOf(req))) throw new Forbidden(`needs ${permission}`);
  res.locals.permission = permission;
  next();
};

/**
 * A person's request that names a row by id (`/lists/7/subscribers.csv`, `/templates/3/preview`, `/messages/<id>`) is
 * held to the row's account as `permitted` holds the account a request names: a read, an export, a preview or a test of
 * another account's row answers 403 "needs <permission> in account <id>" (docs/teams.md). No such row: the route's 404.
 */
export function heldToRow(db: Db): RequestHandler {
  return async (req, res, next) => {
    const actor = res.locals.actor;
    if (!actor || actor === 'admin-token' || actor.operator) return next();
    const account = await accountOfPath(db, req.path);
    if (account === undefined) return next();
    const permission = permissionFor(req.method, req.path);
    if (!can(actor, permission, account)) throw new Forbidden(`needs ${permission} in account ${account}`);
    next();
  };
}

/**
 * A person's read of what the query names instead of an account (`/stats?mailbox=&campaign=&broadcast=`): each named
 * row held to its account as `heldToRow` holds a path's; naming none (nor an account) reads the whole service's, the
 * operator's. The admin token and an operator: nothing held.
 */
export async function heldToNamed(db: Db, req: Request, res: Response, named: Record<string, string>): Promise<void> {
  const actor = res.locals.actor;
  if (!actor || actor === 'admin-token' || actor.operator) return;
  let any = accountOf(req) !== undefined;
  for (const [field, resource] of Object.entries(named)) {
    const id = req.query[field];
    if (typeof id !== 'string' || id === '') continue;
    any = true;
    const account = await accountOfRow(db, resource, id.trim());
    if (account !== undefined && !can(actor, 'read', account)) throw new Forbidden(`needs read in account ${account}`);
  }
  if (!any) throw new Forbidden(`needs instance.manage: name an account of yours (?account=) or one of its ${Object.keys(named).join(', ')}`);
}

/** Who changes something through the admin API: the signed-in person, or the admin token. */
export const changerOf = (res: Response): Changer => res.locals.actor ?? 'admin-token';

/**
 * The accounts a listing covers (docs/teams.md): the one the request names (`permitted` checked the person may read
 * it), else a person's own accounts where they hold `permission`; the admin token and an operator: every account.
 */
export function scopeOf(res: Response, account?: number, permission: Permission = 'read'): AccountScope {
  if (account !== undefined) return account;
  const actor = res.locals.actor;
  if (!actor || actor === 'admin-token' || actor.operator) return undefined;
  return [...actor.roles.keys()].filter((id) => can(actor, permission, id));
}
