import { displayName, Joi } from '../validate';

/** The admin API's account request. */
export const accountInput = Joi.object({ name: displayName().required() });
