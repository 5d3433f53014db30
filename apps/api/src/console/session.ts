import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { config } from '../../../core/src/config';
import { safeEqual } from '../../../core/src/crypto';
import { db } from '../../../core/src/db';
import { redis, rkey } from '../../../core/src/redis';
import { endUserSession, loadUserSession, setSessionFlash, startUserSession, USER_SESSION, type Member, type UserSession } from '../../../core/src/teams';

/**
 * Console sessions, stored in Redis under a random id carried by an HttpOnly SameSite=Strict cookie, only once the
 * admin token was given: before sign-in nothing is stored. The sign-in form's CSRF token is then derived from a random
 * nonce in a short-lived cookie of its own (HMAC under SECRET_KEY), so a stranger loading the page costs no Redis.
 */
export const COOKIE = 'ms_console';
export const SIGNIN_COOKIE = 'ms_console_signin';
const TTL_SECONDS = 8 * 3600;
const SIGNIN_TTL_SECONDS = 3600;

export interface Session {
  id: string;
  csrf: string;
  /** signed in with the admin token (kept in Redis) */
  admin: boolean;
  /** a person signed in with their email (kept in Postgres: teams/sessions.ts), their roles as of this request */
  user?: Member;
  flash?: string;
  /** a person whose password was right and whose second factor is still to come (pages/second-factor.ts) */
  pending?: boolean;
  /** a person an account requires a second factor of, who has none: sent to enrol first (pages/security.ts) */
  mustEnrol?: boolean;
}

/** Signed in at all: with the admin token, or as a person. */
export const signedIn = (session: Session | null | undefined): session is Session => (session?.admin === true || session?.user !== undefined) && !session?.pending;

/** A person's session cookie: HttpOnly, SameSite=Lax (a provider's redirect back must carry it: docs/teams.md), 12 h idle. */
const USER_COOKIE_MAX_AGE_MS = 12 * 3600 * 1000;

const key = (id: string) => rkey('console', 'session', id);

export function cookieValue(req: Request, cookie = COOKIE): string | undefined {
  const header = req.get('cookie') ?? '';
  for (const part of header.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === cookie) return rest.join('=');
  }
  return undefined;
}

/**
 * Cookies are Secure whenever the console is reached over https: PUBLIC_URL says so even when a TLS proxy in front is not
 * named in TRUST_PROXY (then Express sees plain http and req.secure is false).
 */
const secure = (req: Request) => req.secure || config().publicUrl.startsWith('https:');

const signinCsrf = (nonce: string) => crypto.createHmac('sha256', config().secretKey).update(`console-signin:${nonce}`).digest('base64url');

/** The sign-in form's CSRF token: of the nonce cookie the browser has, or of a new one set now. Nothing is stored. */
export function signinToken(req: Request, res: Response): string {
  let nonce = cookieValue(req, SIGNIN_COOKIE);
  if (!nonce || !/^[A-Za-z0-9_-]{32}$/.test(nonce)) {
    nonce = crypto.randomBytes(24).toString('base64url');
    res.cookie(SIGNIN_COOKIE, nonce, { httpOnly: true, sameSite: 'strict', secure: secure(req), path: '/admin', maxAge: SIGNIN_TTL_SECONDS * 1000 });
  }
  return signinCsrf(nonce);
}

/** Whether `given` is the CSRF token of the sign-in form this browser was shown. */
export function signinTokenMatches(req: Request, given: unknown): boolean {
  const nonce = cookieValue(req, SIGNIN_COOKIE);
  return typeof given === 'string' && nonce !== undefined && /^[A-Za-z0-9_-]{32}$/.test(nonce) && safeEqual(given, signinCsrf(nonce));
}

export async function loadSession(req: Request): Promise<Session | null> {
  const id = cookieValue(req);
  if (id && USER_SESSION.test(id)) {
    const found = await loadUserSession(db(), id);
    return found ? personSession(found) : null;
  }
  if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
  const raw = await redis().get(key(id));
  return raw ? ({ ...(JSON.parse(raw) as Omit<Session, 'id'>), id } as Session) : null;
}

export async function saveSession(session: Session): Promise<void> {
  if (session.user) return setSessionFlash(db(), session.id, session.flash ?? null);
  const { id, ...data } = session;
  await redis().set(key(id), JSON.stringify(data), 'EX', TTL_SECONDS);
}

/** A new signed-in session (a new id and CSRF token), set as the cookie; the sign-in nonce and any old session go. */
export async function startSession(req: Request, res: Response, old?: Session | null): Promise<Session> {
  if (old) await dropSession(old);
  const session: Session = { id: crypto.randomBytes(32).toString('base64url'), csrf: crypto.randomBytes(24).toString('base64url'), admin: true };
  await saveSession(session);
  res.cookie(COOKIE, session.id, { httpOnly: true, sameSite: 'strict', secure: secure(req), path: '/admin', maxAge: TTL_SECONDS * 1000 });
  res.clearCookie(SIGNIN_COOKIE, { path: '/admin' });
  return session;
}

const personSession = (found: UserSession): Session => ({
  id: found.id,
  csrf: found.csrf,
  admin: false,
  user: found.member,
  ...(found.flash ? { flash: found.flash } : {}),
  ...(found.pending ? { pending: true } : {}),
  ...(found.mustEnrol ? { mustEnrol: true } : {}),
});

/**
 * A person's new session (a new id and CSRF token) in Postgres, set as the cookie; any old session goes. It is
 * `pending` while a second factor of theirs is still to come (`secondFactorDone` once it was given).
 */
export async function startPersonSession(req: Request, res: Response, userId: number, ip: string, old?: Session | null, options: { secondFactorDone?: boolean } = {}): Promise<Session> {
  if (old) await dropSession(old);
  const { token, session } = await startUserSession(db(), userId, ip, options);
  res.cookie(COOKIE, token, { httpOnly: true, sameSite: 'lax', secure: secure(req), path: '/admin', maxAge: USER_COOKIE_MAX_AGE_MS });
  res.clearCookie(SIGNIN_COOKIE, { path: '/admin' });
  return personSession(session);
}

async function dropSession(session: Session): Promise<void> {
  if (session.user) await endUserSession(db(), session.id);
  else await redis().del(key(session.id));
}

export async function endSession(res: Response, session: Session): Promise<void> {
  await dropSession(session);
  res.clearCookie(COOKIE, { path: '/admin' });
}

/** Whether a signed-in session with this id still exists (an OAuth2 flow bound to it: pages/mailbox-oauth.ts). */
export async function sessionExists(id: string): Promise<boolean> {
  if (/^[0-9a-f]{64}$/.test(id)) return (await db().userSession.count({ where: { id } })) === 1;
  return (await redis().exists(key(id))) === 1;
}

/** Secure cookies exactly as the session's (over https). */
export const secureCookies = secure;

export const csrfMatches = (session: Session, given: unknown) => typeof given === 'string' && safeEqual(given, session.csrf);
