/** Single sign-on with OpenID Connect (docs/teams.md). */
export { createSso, FLOW_TTL_SECONDS, type ProviderAnswer, type Sso } from './flow';
export { claimValues, grantedRoles, type GrantedRoles } from './roles';
export { NoRoleGranted, ssoUser, type SsoIdentity } from './users';
