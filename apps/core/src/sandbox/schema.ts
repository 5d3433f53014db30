import { dbId, Joi } from '../validate';

/** What test keys sent, kept instead of delivered (docs/sandbox.md), newest first: one account's, or every one's. */
export const sandboxQuery = Joi.object({
  account: dbId(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});
