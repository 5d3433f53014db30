import crypto from 'node:crypto';
import { audited, type AuditContext } from '../audit';
import { config } from '../config';
import type { Db, Tx } from '../db';
import { enqueueDelivery, storeMessages } from '../delivery/outbox';
import { BadRequest, Conflict, Forbidden, NotFound } from '../errors';
import { factorsOf, type Factors } from '../second-factor/factors';
import { iso } from '../validate';
import { checkPassword, hashPassword, passwordMatches } from './passwords';
import { can, type AccountRole, type Member, type Role } from './permissions';
import { endAllSessions, loadMember } from './sessions';

/** How long an invitation link and a password-reset link work. */
export const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
export const RESET_TTL_MS = 3600 * 1000;

export interface UserView {
  id: number;
  email: string;
  name: string;
  operator: boolean;
  roles: { account: number; role: AccountRole }[];
  has_password: boolean;
  created_at: string | null;
}

type UserRow = { id: number; email: string; name: string; operator: boolean; passwordHash: string | null; createdAt: Date; memberships: { accountId: number; role: AccountRole }[] };

function view(user: UserRow): UserView {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    operator: user.operator,
    roles: user.memberships.map((m) => ({ account: m.accountId, role: m.role })).sort((a, b) => a.account - b.account),
    has_password: user.passwordHash !== null,
    created_at: iso(user.createdAt),
  };
}

/** A user as the API answers it (SSO's audited changes show it too: sso/users.ts). */
export { view as userView };

/** Who asks for a change: a person (checked against the permission table) or the admin token (everything). */
export type Changer = Member | 'admin-token';

export interface NewUser {
  email: string;
  name: string;
  role: Role;
  account?: number;
}

/** `role` in `account` (or operator) may be given by `by`: an operator gives anything; an owner roles of their account. */
function checkGrant(by: Changer, role: Role, account: number | undefined): void {
  if (role === 'operator' && account !== undefined) throw new BadRequest('account: an operator has every account; leave account out');
  if (role !== 'operator' && account === undefined) throw new BadRequest(`account: required for the role ${role}`);
  if (by === 'admin-token') return;
  if (role === 'operator' ? !by.operator : !can(by, 'users.manage', account)) throw new Forbidden(role === 'operator' ? 'needs instance.manage' : 'needs users.manage');
}

const newToken = () => crypto.randomBytes(32).toString('base64url');
const digest = (token: string) => crypto.createHash('sha256').update(token).digest('hex');
const linkOf = (kind: 'invite' | 'reset', token: string) => `${config().publicUrl.replace(/\/$/, '')}/admin/${kind}/${token}`;

/**
 * POST /admin/api/users: the user, their role, and an invitation link (valid 7 days), also emailed from the account's
 * first mailbox (an operator's: the instance's first mailbox). Answers the link either way; `emailed` says whether a
 * mailbox could send it.
 */
export async function createUser(db: Db, input: NewUser, by: Changer, audit: AuditContext): Promise<{ user: UserView; invite_url: string; emailed: boolean }> {
  checkGrant(by, input.role, input.account);
  const email = input.email.toLowerCase();
  if (input.account !== undefined && !(await db.account.findUnique({ where: { id: input.account }, select: { id: true } }))) throw new NotFound(`no account with id ${input.account}`);
  if (await db.user.findUnique({ where: { email }, select: { id: true } })) throw new Conflict(`a user with the email ${email} exists already`);
  const token = newToken();
  const { user, messages } = await audited(db, audit, { action: 'create', resource: 'user', after: (r) => view(r.user), account: input.account }, async (tx: Tx) => {
    const user = await tx.user.create({
      data: {
        email,
        name: input.name,
        operator: input.role === 'operator',
        ...(input.role !== 'operator' ? { memberships: { create: { accountId: input.account!, role: input.role } } } : {}),
      },
      include: { memberships: true },
    });
    await tx.userToken.create({ data: { id: digest(token), userId: user.id, kind: 'invite', expiresAt: new Date(Date.now() + INVITE_TTL_MS) } });
    const messages = await systemEmail(tx, input.account, email, 'You are invited to the mail service', [
      `Hello ${input.name},`,
      '',
      `You have been invited to the mail service as ${input.role}${input.account ? ` of account ${input.account}` : ''}.`,
      'Choose your password here (the link works for 7 days):',
      '',
      linkOf('invite', token),
    ]);
    return { user, messages };
  });
  await enqueueDelivery(db, messages);
  return { user: view(user), invite_url: linkOf('invite', token), emailed: messages.length > 0 };
}

/** An email of the service itself (invitation, password reset), from the account's first mailbox or the instance's. */
async function systemEmail(tx: Tx, account: number | undefined, to: string, subject: string, lines: string[]): Promise<{ id: string }[]> {
  const mailbox = await tx.mailbox.findFirst({ where: account !== undefined ? { accountId: account } : {}, orderBy: { id: 'asc' } });
  if (!mailbox) return [];
  const rows = await storeMessages(tx, [{ accountId: mailbox.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', to, subject, text: lines.join('\n') }]);
  return rows.map((r) => ({ id: r.id as string }));
}

/** Users: every one for an operator or the admin token, else those sharing an account where `by` manages users. */
export async function listUsers(db: Tx, by: Changer, account?: number): Promise<UserView[]> {
  const users = await db.user.findMany({
    where: account !== undefined ? { memberships: { some: { accountId: account } } } : {},
    include: { memberships: true },
    orderBy: { id: 'asc' },
  });
  if (by === 'admin-token' || by.operator) return users.map(view);
  return users.filter((u) => u.memberships.some((m) => can(by, 'users.manage', m.accountId))).map(view);
}

/**
 * PATCH /admin/api/users/:id {role, account?}: operator (for every account), or the role in one account (which ends
 * operator). `role: "none"` with an account takes the user out of it. Applies at the user's next request.
 */
export async function changeRole(db: Db, id: number, input: { role: Role | 'none'; account?: number }, by: Changer, audit: AuditContext): Promise<UserView> {
  const user = await db.user.findUnique({ where: { id }, include: { memberships: true } });
  if (!user) throw new NotFound(`no user with id ${id}`);
  if (input.role === 'none') {
    if (input.account === undefined) throw new BadRequest('account: required to take a user out of an account');
    checkGrant(by, 'viewer', input.account);
  } else checkGrant(by, input.role, input.account);
  // only an operator may change an operator
  if (user.operator && by !== 'admin-token' && !by.operator) throw new Forbidden('needs instance.manage');
  if (input.account !== undefined && !(await db.account.findUnique({ where: { id: input.account }, select: { id: true } }))) throw new NotFound(`no account with id ${input.account}`);
  const change = { action: 'change-role', resource: 'user', id, account: input.account, before: () => Promise.resolve(view(user)), after: view };
  const changed = await audited(db, audit, change, async (tx: Tx) => {
    if (input.role === 'operator') return tx.user.update({ where: { id }, data: { operator: true }, include: { memberships: true } });
    const where = { userId_accountId: { userId: id, accountId: input.account! } };
    if (input.role === 'none') await tx.membership.deleteMany({ where: { userId: id, accountId: input.account! } });
    else await tx.membership.upsert({ where, create: { userId: id, accountId: input.account!, role: input.role }, update: { role: input.role } });
    return tx.user.update({ where: { id }, data: { operator: false }, include: { memberships: true } });
  });
  return view(changed);
}

/** DELETE /admin/api/users/:id: the user and every session of theirs, at once. */
export async function removeUser(db: Db, id: number, by: Changer, audit: AuditContext): Promise<UserView> {
  const user = await db.user.findUnique({ where: { id }, include: { memberships: true } });
  if (!user) throw new NotFound(`no user with id ${id}`);
  refuseUnlessManagesAll(by, user);
  await audited(db, audit, { action: 'delete', resource: 'user', id, account: user.memberships[0]?.accountId, before: () => Promise.resolve(view(user)) }, (tx: Tx) => tx.user.delete({ where: { id } }));
  return view(user);
}

/**
 * DELETE /admin/api/users/:id/second-factor, a user who lost their device: every second factor of theirs goes
 * (TOTP, recovery codes, passkeys) and every session ends; they enrol again at their next sign-in when an account
 * requires it. Who may: as for removing them.
 */
export async function resetSecondFactor(db: Db, userId: number, by: Changer, audit: AuditContext): Promise<Factors> {
  const user = await db.user.findUnique({ where: { id: userId }, include: { memberships: { orderBy: { accountId: 'asc' } } } });
  if (!user) throw new NotFound(`no user with id ${userId}`);
  refuseUnlessManagesAll(by, user);
  const before = await factorsOf(db, userId);
  const change = { action: 'reset-second-factor', resource: 'user', id: userId, account: user.memberships[0]?.accountId, before: () => Promise.resolve({ id: userId, ...before }), after: () => ({ id: userId, totp: false, passkeys: 0, recovery_codes_left: 0 }) };
  await audited(db, audit, change, async (tx: Tx) => {
    await tx.userTotp.deleteMany({ where: { userId } });
    await tx.recoveryCode.deleteMany({ where: { userId } });
    await tx.passkey.deleteMany({ where: { userId } });
    await tx.userSession.deleteMany({ where: { userId } });
  });
  return factorsOf(db, userId);
}

/** Removing a user, or resetting their second factor: the admin token, an operator, or the owner of every account of theirs. */
function refuseUnlessManagesAll(by: Changer, user: { operator: boolean; memberships: { accountId: number }[] }): void {
  if (by !== 'admin-token' && !by.operator && (user.operator || !user.memberships.every((m) => can(by, 'users.manage', m.accountId)))) throw new Forbidden('needs users.manage');
}

/** POST /admin/api/users/:id/signout: ends every session of the user. */
export async function signOutUser(db: Db, id: number, by: Changer, audit: AuditContext): Promise<number> {
  const user = await db.user.findUnique({ where: { id }, include: { memberships: true } });
  if (!user) throw new NotFound(`no user with id ${id}`);
  if (by !== 'admin-token' && by.id !== id && !by.operator && (user.operator || !user.memberships.every((m) => can(by, 'users.manage', m.accountId)))) throw new Forbidden('needs users.manage');
  return audited(db, audit, { action: 'sign-out-everywhere', resource: 'user', id, account: user.memberships[0]?.accountId, after: (count) => ({ sessions: count }) }, (tx: Tx) => endAllSessions(tx, id));
}

/** The user of a live link; the refusals say what is wrong with it. */
async function liveToken(db: Tx, kind: 'invite' | 'reset', token: string, now: Date) {
  const row = /^[A-Za-z0-9_-]{43}$/.test(token) ? await db.userToken.findUnique({ where: { id: digest(token) } }) : null;
  const what = kind === 'invite' ? 'invitation' : 'password-reset link';
  if (!row || row.kind !== kind) throw new NotFound(`this ${what} is not valid: check the link`);
  if (row.usedAt) throw new BadRequest(`this ${what} was used already`);
  if (row.expiresAt <= now) throw new BadRequest(`this ${what} has expired: ask for a new one`);
  return row;
}

/** Whether an invitation or reset link works now (the page that asks for the password checks it first). */
export async function checkLink(db: Tx, kind: 'invite' | 'reset', token: string, now = new Date()): Promise<{ email: string; name: string }> {
  const row = await liveToken(db, kind, token, now);
  const user = await db.user.findUniqueOrThrow({ where: { id: row.userId } });
  return { email: user.email, name: user.name };
}

/**
 * Sets the password through an invitation or a reset link, which is then used; a reset ends every session of the
 * user. Answers the user's id (the console signs them in).
 */
export async function setPasswordByLink(db: Db, kind: 'invite' | 'reset', token: string, password: string, audit: Omit<AuditContext, 'actor'>, now = new Date()): Promise<number> {
  const row = await liveToken(db, kind, token, now);
  checkPassword(password);
  const hash = await hashPassword(password);
  const user = await db.user.findUniqueOrThrow({ where: { id: row.userId } });
  const actor = { kind: 'user' as const, id: user.id, label: user.email };
  const change = { action: kind === 'invite' ? 'accept-invitation' : 'reset-password', resource: 'user', id: user.id, after: () => ({ id: user.id, email: user.email, password: 'set' }) };
  await audited(db, { ...audit, actor }, change, async (tx: Tx) => {
    // the link is used once, even by two forms sent at the same moment
    const used = await tx.userToken.updateMany({ where: { id: row.id, usedAt: null }, data: { usedAt: now } });
    if (used.count !== 1) throw new BadRequest(`this ${kind === 'invite' ? 'invitation' : 'password-reset link'} was used already`);
    await tx.user.update({ where: { id: row.userId }, data: { passwordHash: hash } });
    if (kind === 'reset') await tx.userSession.deleteMany({ where: { userId: row.userId } });
  });
  return row.userId;
}

/**
 * "Forgot your password": emails a reset link (1 hour) when the address is a user's. Answers the same either way, so
 * the form tells nobody who has an account.
 */
export async function requestPasswordReset(db: Db, email: string): Promise<void> {
  const user = await db.user.findUnique({ where: { email: email.trim().toLowerCase() }, include: { memberships: { orderBy: { accountId: 'asc' } } } });
  if (!user) return;
  const token = newToken();
  const messages = await db.$transaction(async (tx) => {
    await tx.userToken.create({ data: { id: digest(token), userId: user.id, kind: 'reset', expiresAt: new Date(Date.now() + RESET_TTL_MS) } });
    return systemEmail(tx, user.memberships[0]?.accountId, user.email, 'Reset your password', [
      `Hello ${user.name},`,
      '',
      'Someone (you, we hope) asked to reset your password. Choose a new one here (the link works for one hour):',
      '',
      linkOf('reset', token),
      '',
      'If it was not you, ignore this email: your password stays as it is.',
    ]);
  });
  await enqueueDelivery(db, messages);
}

/** The user whose email and password these are, or null (the caller counts the failure). */
export async function signIn(db: Tx, email: string, password: string): Promise<Member | null> {
  const user = await db.user.findUnique({ where: { email: email.trim().toLowerCase() } });
  if (!(await passwordMatches(password, user?.passwordHash ?? null)) || !user) return null;
  return loadMember(db, user.id);
}
