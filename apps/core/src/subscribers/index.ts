export * from './machine';
export * from './schema';
export { confirmByLink, inspectLink } from './tokens';
export { registerConfirmationGuard } from './guard';
