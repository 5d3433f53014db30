/** A second factor (docs/teams.md): TOTP with recovery codes, passkeys, and an account that requires one. */
export * from './factors';
export * from './passkeys';
export * from './totp-operations';
export { otpauthUri } from './totp';
