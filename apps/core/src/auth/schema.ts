import { displayName, dbId, Joi } from '../validate';
import { SCOPES } from './keys';

/** The admin API's API-key request (docs/teams.md, docs/sandbox.md). */
export const keyInput = Joi.object({
  account: dbId().required(),
  name: displayName().required(),
  mailbox: dbId().required(),
  daily_limit: Joi.number().integer().min(0).max(10_000_000).required(),
  prospects: Joi.boolean().default(false),
  mode: Joi.string().valid('live', 'test').default('live').description('test: an `ms_test_` key whose sends go to the sandbox, never out (docs/sandbox.md)'),
  scopes: Joi.array().items(Joi.string().valid(...SCOPES)).min(1).unique().description('what the key may do (docs/teams.md); all of them when left out'),
  domains: Joi.array().items(Joi.string().trim().lowercase().hostname().max(253)).max(100).unique().description('the From domains the key may send from; any when left out'),
  expires_at: Joi.date().iso().greater('now').allow(null).description('from then on the key answers 401 "key expired"'),
});
