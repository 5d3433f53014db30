import { OAUTH_PROVIDERS } from './oauth-providers';
import { dbId, email, Joi } from '../validate';

/**
 * The admin API's mailbox requests (docs/mailboxes.md, docs/outreach.md), shared by its routes, the console and the
 * CLI, and written into the admin OpenAPI document.
 */
/** What a mailbox is set up with, given when it is added and changed after (each optional). */
const settings = {
  name: Joi.string().trim().max(200).allow(''),
  // required with a password; with auth oauth2 a preset's server is the default (docs/mailboxes.md)
  smtp: Joi.string().trim().max(2000),
  auth: authInput(),
  daily_limit: Joi.number().integer().min(0).max(100_000),
  gap_seconds: Joi.number().integer().min(0).max(86_400),
  imap: Joi.string().trim().max(2000).allow(null, ''),
  max_per_second: Joi.number().integer().min(1).max(100_000).allow(null),
  dkim: dkimInput().allow(null),
  return_path: Joi.string().valid('address', 'verp'),
  gap_jitter: gapJitter(),
  warmup: warmupInput().allow(null),
};

export const mailboxInput = Joi.object({ account: dbId().required(), address: email().required(), ...settings });

export const mailboxChange = Joi.object({
  ...settings,
  /** docs/campaigns.md: a paused mailbox sends no outreach; rotations pass it over */
  paused: Joi.boolean(),
}).min(1);

/** docs/outreach.md: the wait after an outreach email is drawn from [gap, gap x (1 + gap_jitter)]. */
function gapJitter() {
  return Joi.number().min(0).max(1).messages({ 'number.min': 'gap_jitter must be from 0 to 1', 'number.max': 'gap_jitter must be from 0 to 1' });
}

/** docs/outreach.md: the day's outreach cap grows from `start` by `step` a day up to daily_limit. */
function warmupInput() {
  return Joi.object({
    start: Joi.number().integer().min(0).max(100_000).required(),
    step: Joi.number().integer().min(0).max(100_000).required().messages({ 'number.min': 'step must not be negative' }),
  });
}

/** docs/mailboxes.md: a password (the URLs'), or OAuth2 with a refresh token; secrets are never answered. */
function authInput() {
  return Joi.alternatives().conditional('.type', {
    is: 'oauth2',
    then: Joi.object({
      type: Joi.string().valid('oauth2').required(),
      provider: Joi.string().valid(...OAUTH_PROVIDERS).required(),
      client_id: Joi.string().trim().max(500),
      client_secret: Joi.string().max(2000),
      refresh_token: Joi.string().max(8000),
      token_url: Joi.string().trim().uri({ scheme: ['https', 'http'] }).max(2000),
      auth_url: Joi.string().trim().uri({ scheme: ['https', 'http'] }).max(2000),
      scope: Joi.string().trim().max(2000).allow(''),
    }),
    otherwise: Joi.object({ type: Joi.string().valid('password', 'oauth2').required() }),
  });
}

function dkimInput() {
  return Joi.object({
    domain: Joi.string().trim().hostname().max(253).required(),
    selector: Joi.string().trim().pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/).required(),
    private_key: Joi.string().trim().max(10_000).required(),
  });
}
