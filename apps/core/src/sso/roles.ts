import type { OidcConfig } from '../config';
import { ACCOUNT_ROLES, type AccountRole } from '../teams';

/** What the identity provider's claim gives a person here (docs/teams.md): operator, and a role per account. */
export interface GrantedRoles {
  operator: boolean;
  /** account id -> role */
  roles: Map<number, AccountRole>;
}

/** The claim's values: a string, an array of strings, or a nested claim by a dotted path (`realm_access.roles`). */
export function claimValues(claims: Record<string, unknown>, claim: string): string[] {
  let value: unknown = claim in claims ? claims[claim] : claims;
  if (!(claim in claims)) {
    for (const part of claim.split('.')) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * The roles OIDC_ROLE_MAP gives these claims: a value it does not name gives nothing; two values giving roles in one
 * account give the stronger (owner, admin, sender, viewer).
 */
export function grantedRoles(claims: Record<string, unknown>, settings: Pick<OidcConfig, 'roleClaim' | 'roleMap'>): GrantedRoles {
  const granted: GrantedRoles = { operator: false, roles: new Map() };
  for (const value of claimValues(claims, settings.roleClaim)) {
    const grant = settings.roleMap.get(value);
    if (grant === undefined) continue;
    if (grant === 'operator') {
      granted.operator = true;
      continue;
    }
    const held = granted.roles.get(grant.account);
    if (held === undefined || ACCOUNT_ROLES.indexOf(grant.role) < ACCOUNT_ROLES.indexOf(held)) granted.roles.set(grant.account, grant.role);
  }
  return granted;
}

export const grantsNothing = (granted: GrantedRoles) => !granted.operator && granted.roles.size === 0;
