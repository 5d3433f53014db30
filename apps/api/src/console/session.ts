import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { safeEqual } from '../../../core/src/crypto';
import { redis, rkey } from '../../../core/src/redis';

/**
 * Console sessions, stored in Redis under a random id carried by an HttpOnly SameSite=Strict cookie. A session exists
 * before sign-in too (it holds the CSRF token of the sign-in form); signing in replaces it with a new id.
 */
export const COOKIE = 'ms_console';
const TTL_SECONDS = 8 * 3600;

export interface Session {
  id: string;
  csrf: string;
  admin: boolean;
  flash?: string;
}

const key = (id: string) => rkey('console', 'session', id);

function cookieValue(req: Request): string | undefined {
  const header = req.get('cookie') ?? '';
  for (const part of header.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === COOKIE) return rest.join('=');
  }
  return undefined;
}

export async function loadSession(req: Request): Promise<Session | null> {
  const id = cookieValue(req);
  if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
  const raw = await redis().get(key(id));
  return raw ? ({ ...(JSON.parse(raw) as Omit<Session, 'id'>), id } as Session) : null;
}

export async function saveSession(session: Session): Promise<void> {
  const { id, ...data } = session;
  await redis().set(key(id), JSON.stringify(data), 'EX', TTL_SECONDS);
}

/** A new session (a new id and CSRF token), set as the cookie; the old one, if any, is dropped. */
export async function startSession(req: Request, res: Response, admin: boolean, old?: Session | null): Promise<Session> {
  if (old) await redis().del(key(old.id));
  const session: Session = { id: crypto.randomBytes(32).toString('base64url'), csrf: crypto.randomBytes(24).toString('base64url'), admin };
  await saveSession(session);
  res.cookie(COOKIE, session.id, { httpOnly: true, sameSite: 'strict', secure: req.secure, path: '/admin', maxAge: TTL_SECONDS * 1000 });
  return session;
}

export async function endSession(res: Response, session: Session): Promise<void> {
  await redis().del(key(session.id));
  res.clearCookie(COOKIE, { path: '/admin' });
}

export const csrfMatches = (session: Session, given: unknown) => typeof given === 'string' && safeEqual(given, session.csrf);
