import { audited, type AuditContext } from '../audit';
import type { Db, Tx } from '../db';
import { NotFound } from '../errors';

/** What second factor a user has: a confirmed TOTP, how many passkeys, how many recovery codes are left. */
export interface Factors {
  totp: boolean;
  passkeys: number;
  recovery_codes_left: number;
}

export async function factorsOf(db: Tx, userId: number): Promise<Factors> {
  const [totp, passkeys, recovery] = await Promise.all([
    db.userTotp.findUnique({ where: { userId }, select: { confirmedAt: true } }),
    db.passkey.count({ where: { userId } }),
    db.recoveryCode.count({ where: { userId, usedAt: null } }),
  ]);
  return { totp: Boolean(totp?.confirmedAt), passkeys, recovery_codes_left: recovery };
}

export const hasFactor = (f: Pick<Factors, 'totp' | 'passkeys'>) => f.totp || f.passkeys > 0;

/**
 * Whether a user must still enrol: one of their accounts requires a second factor and they have none. Read with the
 * session on every request (teams/sessions.ts), so a requirement applies at the next one.
 */
export function mustEnrol(user: { totp: { confirmedAt: Date | null } | null; passkeys: unknown[]; memberships: { account: { requireSecondFactor: boolean } }[] }): boolean {
  const has = Boolean(user.totp?.confirmedAt) || user.passkeys.length > 0;
  return !has && user.memberships.some((m) => m.account.requireSecondFactor);
}

/** What loadUserSession reads with the user to decide `mustEnrol`. */
export const ENROL_INCLUDE = {
  totp: { select: { confirmedAt: true } },
  passkeys: { select: { id: true }, take: 1 },
} as const;

export interface AccountSecondFactor {
  account: number;
  required: boolean;
  users: ({ id: number; email: string } & Factors)[];
}

/** An account's requirement and each of its users' factors (GET /admin/api/users/second-factor?account=). */
export async function accountSecondFactor(db: Tx, account: number): Promise<AccountSecondFactor> {
  const row = await db.account.findUnique({ where: { id: account }, select: { requireSecondFactor: true } });
  if (!row) throw new NotFound(`no account with id ${account}`);
  const users = await db.user.findMany({ where: { memberships: { some: { accountId: account } } }, select: { id: true, email: true }, orderBy: { id: 'asc' } });
  return { account, required: row.requireSecondFactor, users: await Promise.all(users.map(async (u) => ({ ...u, ...(await factorsOf(db, u.id)) }))) };
}

/**
 * An owner requires (or stops requiring) a second factor of the account's users: one without one is sent to enrol at
 * their next request.
 */
export async function requireSecondFactor(db: Db, account: number, required: boolean, audit: AuditContext): Promise<AccountSecondFactor> {
  const before = await db.account.findUnique({ where: { id: account }, select: { requireSecondFactor: true } });
  if (!before) throw new NotFound(`no account with id ${account}`);
  const change = { action: 'require-second-factor', resource: 'account', id: account, account, before: () => Promise.resolve({ id: account, require_second_factor: before.requireSecondFactor }), after: () => ({ id: account, require_second_factor: required }) };
  await audited(db, audit, change, (tx: Tx) => tx.account.update({ where: { id: account }, data: { requireSecondFactor: required } }));
  return accountSecondFactor(db, account);
}
