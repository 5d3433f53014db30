import crypto from 'node:crypto';
import type { Tx } from '../db';
import type { AccountRole, Member } from './permissions';

/** A session ends after 12 hours without a request (docs/teams.md). */
export const IDLE_MS = 12 * 3600 * 1000;
/** lastSeenAt is written at most this often per session: most requests only read */
const TOUCH_MS = 60_000;

/** Cookie values of user sessions: `u_` + 43 base64url characters (the admin token's sessions have no prefix). */
export const USER_SESSION = /^u_[A-Za-z0-9_-]{43}$/;

const digest = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

export interface UserSession {
  /** the row's id: SHA-256 of the cookie's token */
  id: string;
  csrf: string;
  flash: string | null;
  member: Member;
}

/** A new session of `userId`; answers the cookie's token (kept nowhere but in the browser). */
export async function startUserSession(db: Tx, userId: number, ip?: string): Promise<{ token: string; session: UserSession }> {
  const token = `u_${crypto.randomBytes(32).toString('base64url')}`;
  const csrf = crypto.randomBytes(24).toString('base64url');
  await db.userSession.create({ data: { id: digest(token), userId, csrf, ip } });
  const member = await loadMember(db, userId);
  return { token, session: { id: digest(token), csrf, flash: null, member: member! } };
}

/**
 * The session of a cookie's token with its user as they are now (roles read afresh: a removed or demoted user loses
 * access at the next request); null when unknown or idle past 12 hours (then it is deleted).
 */
export async function loadUserSession(db: Tx, token: string, now = new Date()): Promise<UserSession | null> {
  if (!USER_SESSION.test(token)) return null;
  const row = await db.userSession.findUnique({ where: { id: digest(token) }, include: { user: { include: { memberships: true } } } });
  if (!row) return null;
  if (now.getTime() - row.lastSeenAt.getTime() > IDLE_MS) {
    await db.userSession.deleteMany({ where: { id: row.id } });
    return null;
  }
  if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_MS) await db.userSession.update({ where: { id: row.id }, data: { lastSeenAt: now } });
  return { id: row.id, csrf: row.csrf, flash: row.flash, member: memberOf(row.user) };
}

export async function setSessionFlash(db: Tx, id: string, flash: string | null): Promise<void> {
  await db.userSession.updateMany({ where: { id }, data: { flash } });
}

export async function endUserSession(db: Tx, id: string): Promise<void> {
  await db.userSession.deleteMany({ where: { id } });
}

/** "Sign out everywhere": every session of the user ends; answers how many there were. */
export async function endAllSessions(db: Tx, userId: number): Promise<number> {
  return (await db.userSession.deleteMany({ where: { userId } })).count;
}

export async function loadMember(db: Tx, userId: number): Promise<Member | null> {
  const user = await db.user.findUnique({ where: { id: userId }, include: { memberships: true } });
  return user ? memberOf(user) : null;
}

function memberOf(user: { id: number; email: string; name: string; operator: boolean; memberships: { accountId: number; role: AccountRole }[] }): Member {
  return { id: user.id, email: user.email, name: user.name, operator: user.operator, roles: new Map(user.memberships.map((m) => [m.accountId, m.role])) };
}
