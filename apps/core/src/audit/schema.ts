import { dbId, Joi } from '../validate';

/** `GET /admin/api/audit` and its NDJSON export: filters and the keyset cursor (docs/teams.md). */
export const auditQuery = Joi.object({
  account: dbId(),
  actor: Joi.string().trim().max(254).description("a user's email, or `admin token`"),
  action: Joi.string().trim().max(60),
  resource: Joi.string().trim().max(60),
  after: Joi.number().integer().min(0).description('entries after this id, oldest first'),
  before: Joi.number().integer().min(1).description('entries before this id, newest first'),
  limit: Joi.number().integer().min(1).max(1000),
}).oxor('after', 'before');
