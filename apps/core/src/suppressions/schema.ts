import { Joi, NO_NUL, dbId, email } from '../validate';

/** The suppressions page's search: part of an address, one account, one reason. */
export const suppressionFilter = Joi.object({
  account: dbId().empty(''),
  q: Joi.string().trim().max(254).pattern(new RegExp(NO_NUL)).empty('').label('search'),
  reason: Joi.string().valid('bounced', 'complained', 'manual', 'unsubscribed').empty(''),
  limit: Joi.number().integer().min(1).max(500).default(100),
});

/** An address suppressed by hand, and why. */
export const suppressionInput = Joi.object({
  account: dbId().required(),
  email: email().required(),
  detail: Joi.string().trim().min(3).max(500).pattern(new RegExp(NO_NUL)).required().label('reason'),
});

/** Taking an address off: the reason is required (it goes into the audit log). */
export const suppressionRemoval = Joi.object({
  reason: Joi.string().trim().min(3).max(500).pattern(new RegExp(NO_NUL)).required().label('reason'),
});
