import { EVENT_TYPES } from '../events';
import { Joi } from '../validate';

/** Inputs of the webhook admin API (DESIGN section 5), shared by the HTTP routes and the CLI. */
const url = () =>
  Joi.string()
    .trim()
    .max(2000)
    .uri({ scheme: ['http', 'https'] })
    .messages({ 'string.uri': '"url" must be an http or https URL', 'string.uriCustomScheme': '"url" must be an http or https URL' });

const events = () =>
  Joi.array()
    .items(
      Joi.string()
        .valid('*', ...EVENT_TYPES)
        .messages({ 'any.only': `"events" has an unknown event type {#value}; known: ${EVENT_TYPES.join(', ')} (or "*" for all)` }),
    )
    .min(1)
    .unique();

export const webhookInput = Joi.object({
  account: Joi.number().integer().positive().required(),
  url: url().required(),
  events: events(),
});

export const webhookChanges = Joi.object({ url: url(), events: events(), enabled: Joi.boolean() })
  .min(1)
  .messages({ 'object.min': 'nothing to change' });

export const webhooksQuery = Joi.object({ account: Joi.number().integer().positive() });

export const deliveriesQuery = Joi.object({ limit: Joi.number().integer().min(1).max(1000).default(100) });

export interface WebhookInput {
  account: number;
  url: string;
  events?: string[];
}
export interface WebhookChanges {
  url?: string;
  events?: string[];
  enabled?: boolean;
}
