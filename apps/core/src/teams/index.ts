/** Teams (docs/teams.md): users, roles, sessions. */
export * from './permissions';
export { checkPassword } from './passwords';
export * from './sessions';
export * from './users';
