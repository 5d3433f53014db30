import { dbId, Joi } from '../validate';

/** Inputs of /admin/api/users/second-factor (docs/teams.md), shared by the route and the OpenAPI document. */
export const secondFactorQuery = Joi.object({ account: dbId().required() });

export const secondFactorRequirement = Joi.object({
  account: dbId().required(),
  required: Joi.boolean().strict().required().description('true: every user of the account must have a second factor'),
});
