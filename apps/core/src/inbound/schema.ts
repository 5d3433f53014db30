import { dbId, Joi } from '../validate';

/** The emails the IMAP reader handled (docs/inbound.md), newest first. */
export const inboundQuery = Joi.object({
  mailbox: dbId(),
  unmatched: Joi.boolean(),
  // the MX's messages in this state (docs/mx.md) instead of the IMAP reader's
  status: Joi.string().valid('delivered', 'held', 'dropped', 'report'),
  account: dbId(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** An inbound email's id: a bigint that carries its time, below 2^53 (docs/partitions.md). */
export const inboundId = Joi.number().integer().positive().max(Number.MAX_SAFE_INTEGER).required().label('id');
