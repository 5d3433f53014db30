import { dbId, email, Joi } from '../validate';
import { ROLES } from './permissions';

/** Inputs of /admin/api/users (docs/teams.md), shared by the route, the console and the OpenAPI document. */
export const userInput = Joi.object({
  email: email().required(),
  name: Joi.string().trim().min(1).max(200).required(),
  role: Joi.string().valid(...ROLES).required(),
  account: dbId().description('the account of the role; none for operator'),
});

export const userChange = Joi.object({
  role: Joi.string().valid(...ROLES, 'none').required().description('none: take the user out of `account`'),
  account: dbId(),
});

export const usersQuery = Joi.object({ account: dbId() });
