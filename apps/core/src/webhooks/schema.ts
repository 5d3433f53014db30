import { config } from '../config';
import { EVENT_TYPES } from '../events';
import { mayConnect } from '../outbound/guard';
import { dbId, Joi } from '../validate';

/**
 * An endpoint written as an address (or `localhost`) that the outbound guard would refuse is refused when it is set,
 * not only at delivery (outbound/guard.ts; names are checked when they are resolved, at each delivery).
 */
function publicEndpoint(value: string, helpers: { error: (code: string) => unknown }) {
  const host = new URL(value).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const literal = /^[\d.]+$/.test(host) || host.includes(':') ? host : host === 'localhost' || host.endsWith('.localhost') ? '127.0.0.1' : null;
  if (literal !== null && !mayConnect(literal, { allowPrivate: config().webhookAllowPrivate })) return helpers.error('webhook.private');
  return value;
}

/** Inputs of the webhook admin API (docs/webhooks.md), shared by the HTTP routes and the CLI. */
const url = () =>
  Joi.string()
    .trim()
    .max(2000)
    .uri({ scheme: ['http', 'https'] })
    .custom(publicEndpoint)
    .messages({
      'string.uri': '"url" must be an http or https URL',
      'string.uriCustomScheme': '"url" must be an http or https URL',
      'webhook.private': '"url" must be a public address: this one is loopback, private or otherwise not routable (WEBHOOK_ALLOW_PRIVATE=true allows them)',
    });

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

export const webhooksQuery = Joi.object({ account: dbId() });

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
