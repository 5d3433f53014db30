export * from './machine';
export * from './schema';
export { confirmByLink, inspectLink } from './tokens';
export { confirmationRefusal } from './guard';
