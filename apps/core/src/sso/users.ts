import { audited, type AuditContext } from '../audit';
import type { Db, Tx } from '../db';
import { Conflict, Forbidden } from '../errors';
import { endAllSessions, userView } from '../teams';
import { grantsNothing, type GrantedRoles } from './roles';

/** Who the provider's ID token says signed in. */
export interface SsoIdentity {
  issuer: string;
  subject: string;
  email: string;
  /** the provider's `email_verified`: only a verified address links an existing user to this identity */
  emailVerified: boolean;
  name: string;
}

/** A sign-in the mapping gives nothing: no user is made, and a user of this identity loses every role they held. */
export class NoRoleGranted extends Forbidden {}

const include = { memberships: true } as const;

/**
 * The user of an SSO sign-in, made or brought up to date (docs/teams.md): found by the provider's issuer and subject,
 * else by a verified email (and linked); made or linked only when the mapping gives a role. The roles are the mapping's
 * at every sign-in (group changes apply then), in one audited transaction with what else changed; a sign-in the mapping
 * gives nothing is refused, and takes from a user who signed in through the provider before every role and session.
 */
export async function ssoUser(db: Db, identity: SsoIdentity, granted: GrantedRoles, audit: Omit<AuditContext, 'actor'>): Promise<number> {
  const email = identity.email.toLowerCase();
  const linked = await db.user.findUnique({ where: { oidcIssuer_oidcSubject: { oidcIssuer: identity.issuer, oidcSubject: identity.subject } }, include });
  const user = linked ?? (await db.user.findUnique({ where: { email }, include }));
  if (user && !linked) {
    if (user.oidcSubject !== null) throw new Conflict(`${email} signs in as another identity of the provider; ask an operator`);
    if (!identity.emailVerified) throw new Forbidden(`the provider does not say ${email} is verified, so it is not linked to the user with that email; ask an operator`);
  }
  // accounts the mapping names that do not exist give nothing
  const accounts = new Set((await db.account.findMany({ where: { id: { in: [...granted.roles.keys()] } }, select: { id: true } })).map((a) => a.id));
  const roles = [...granted.roles].filter(([account]) => accounts.has(account));
  const nothing = grantsNothing({ operator: granted.operator, roles: new Map(roles) });
  // nobody is made, and a user who never signed in through the provider is left as they are
  if ((!user || !linked) && nothing) throw new NoRoleGranted('your identity provider gives you no role here: ask your administrator to add you to a group the service maps');
  const actor = { kind: 'user' as const, id: user?.id, label: email };
  const held = user ? JSON.stringify([user.operator, user.memberships.map((m) => [m.accountId, m.role]).sort()]) : '';
  const same = user && linked && held === JSON.stringify([granted.operator, roles.sort()]);
  if (same) return user.id;
  const action = !user ? 'sso-create' : nothing ? 'sso-no-role' : 'sso-sign-in';
  const change = { action, resource: 'user', id: user?.id, account: roles[0]?.[0], before: user ? () => Promise.resolve(userView(user)) : undefined, after: userView };
  const saved = await audited(db, { ...audit, actor }, change, async (tx: Tx) => {
    const identityColumns = { oidcIssuer: identity.issuer, oidcSubject: identity.subject, operator: granted.operator };
    const id = user
      ? (await tx.user.update({ where: { id: user.id }, data: identityColumns })).id
      : (await tx.user.create({ data: { email, name: identity.name || email, ...identityColumns } })).id;
    await tx.membership.deleteMany({ where: { userId: id, accountId: { notIn: roles.map(([account]) => account) } } });
    for (const [accountId, role] of roles) await tx.membership.upsert({ where: { userId_accountId: { userId: id, accountId } }, create: { userId: id, accountId, role }, update: { role } });
    if (nothing) await endAllSessions(tx, id);
    return tx.user.findUniqueOrThrow({ where: { id }, include });
  });
  if (nothing) throw new NoRoleGranted('your identity provider no longer gives you a role here: your roles and sessions have ended');
  return saved.id;
}
