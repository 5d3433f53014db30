import crypto from 'node:crypto';
import type { Tx } from '../db';
import { ENROL_INCLUDE, factorsOf, hasFactor, mustEnrol } from '../second-factor/factors';
import type { AccountRole, Member } from './permissions';

/** A session ends after 12 hours without a request (docs/teams.md). */
export const IDLE_MS = 12 * 3600 * 1000;
/** lastSeenAt is written at most this often per session: most requests only read */
const TOUCH_MS = 60_000;

/** A session whose second factor is still to come ends after 10 minutes. */
export const PENDING_MS = 10 * 60 * 1000;

/** Cookie values of user sessions: `u_` + 43 base64url characters (the admin token's sessions have no prefix). */
export const USER_SESSION = /^u_[A-Za-z0-9_-]{43}$/;

const digest = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

export interface UserSession {
  /** the row's id: SHA-256 of the cookie's token */
  id: string;
  csrf: string;
  flash: string | null;
  member: Member;
  /** the password was right and the second factor is still to come: nothing else is open to it */
  pending: boolean;
  /** an account of theirs requires a second factor and they have none: they are sent to enrol first */
  mustEnrol: boolean;
}

/**
 * A new session of `userId`; answers the cookie's token (kept nowhere but in the browser). A user with a second factor
 * gets a pending session until it is given (`secondFactorDone` once it was).
 */
export async function startUserSession(db: Tx, userId: number, ip?: string, options: { secondFactorDone?: boolean } = {}): Promise<{ token: string; session: UserSession }> {
  const token = `u_${crypto.randomBytes(32).toString('base64url')}`;
  const csrf = crypto.randomBytes(24).toString('base64url');
  const pending = !options.secondFactorDone && hasFactor(await factorsOf(db, userId));
  await db.userSession.create({ data: { id: digest(token), userId, csrf, ip, pending } });
  const found = await loadUserSession(db, token);
  return { token, session: found! };
}

/**
 * The session of a cookie's token with its user as they are now (roles read afresh: a removed or demoted user loses
 * access at the next request); null when unknown or idle past 12 hours (then it is deleted).
 */
export async function loadUserSession(db: Tx, token: string, now = new Date()): Promise<UserSession | null> {
  if (!USER_SESSION.test(token)) return null;
  const include = { user: { include: { memberships: { include: { account: { select: { requireSecondFactor: true } } } }, ...ENROL_INCLUDE } } } as const;
  const row = await db.userSession.findUnique({ where: { id: digest(token) }, include });
  if (!row) return null;
  if (now.getTime() - row.lastSeenAt.getTime() > IDLE_MS || (row.pending && now.getTime() - row.createdAt.getTime() > PENDING_MS)) {
    await db.userSession.deleteMany({ where: { id: row.id } });
    return null;
  }
  if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_MS) await db.userSession.update({ where: { id: row.id }, data: { lastSeenAt: now } });
  return { id: row.id, csrf: row.csrf, flash: row.flash, member: memberOf(row.user), pending: row.pending, mustEnrol: mustEnrol(row.user) };
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
