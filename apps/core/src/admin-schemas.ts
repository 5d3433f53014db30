import { templateRef } from './templates/schema';
import { dbId, email, Joi } from './validate';
import { CAMPAIGN_STATUSES, GOALS } from './outreach/campaigns';
import { isTimeZone, minuteOfDay } from './outreach/windows';
import { IMPORT_STATUSES } from './imports/parse';
import { verifyMode } from './verify/schemas';
import { seriesSteps } from './lifecycle/schema';
import { topicsSchema } from './topics';
import { OAUTH_PROVIDERS } from './oauth/providers';
import { campaignStep } from './outreach/branch-schema';
import { SCOPES } from './auth/keys';

/**
 * Inputs of the admin API (docs/api.md), shared by the HTTP routes, the console and the CLI, and written into the admin
 * API's OpenAPI document (apps/api/src/openapi/admin-document.ts).
 */
const id = dbId;
const name = () => Joi.string().trim().min(1).max(200);

export const accountInput = Joi.object({ name: name().required() });

export const mailboxInput = Joi.object({
  account: id().required(),
  address: email().required(),
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
});

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

export const mailboxChange = Joi.object({
  auth: authInput(),
  name: Joi.string().trim().max(200).allow(''),
  smtp: Joi.string().trim().max(2000),
  daily_limit: Joi.number().integer().min(0).max(100_000),
  gap_seconds: Joi.number().integer().min(0).max(86_400),
  imap: Joi.string().trim().max(2000).allow(null, ''),
  max_per_second: Joi.number().integer().min(1).max(100_000).allow(null),
  dkim: dkimInput().allow(null),
  return_path: Joi.string().valid('address', 'verp'),
  gap_jitter: gapJitter(),
  warmup: warmupInput().allow(null),
  /** docs/campaigns.md: a paused mailbox sends no outreach; rotations pass it over */
  paused: Joi.boolean(),
}).min(1);

export const keyInput = Joi.object({
  account: id().required(),
  name: name().required(),
  mailbox: id().required(),
  daily_limit: Joi.number().integer().min(0).max(10_000_000).required(),
  prospects: Joi.boolean().default(false),
  mode: Joi.string().valid('live', 'test').default('live').description('test: an `ms_test_` key whose sends go to the sandbox, never out (docs/sandbox.md)'),
  scopes: Joi.array().items(Joi.string().valid(...SCOPES)).min(1).unique().description('what the key may do (docs/teams.md); all of them when left out'),
  domains: Joi.array().items(Joi.string().trim().lowercase().hostname().max(253)).max(100).unique().description('the From domains the key may send from; any when left out'),
  expires_at: Joi.date().iso().greater('now').allow(null).description('from then on the key answers 401 "key expired"'),
});

export const listChanges = Joi.object({ name: name(), confirm: Joi.boolean(), mailbox: id(), steps: seriesSteps, topics: topicsSchema, public: Joi.boolean() }).min(1).messages({ 'object.min': 'nothing to change' });

export const subscribersQuery = Joi.object({
  status: Joi.string().valid('pending', 'active', 'unsubscribed', 'bounced', 'complained'),
  q: Joi.string().trim().min(1).max(254),
  after: id(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** Keyset pages of an account's suppressions or stop list. */
export const entriesQuery = Joi.object({ account: id().required(), after: id(), limit: Joi.number().integer().min(1).max(1000).default(100) });

export const listInput = Joi.object({
  account: id().required(),
  name: name().required(),
  confirm: Joi.boolean().required(),
  mailbox: id().required(),
  /** the list's welcome series (docs/lists.md) */
  steps: seriesSteps,
  /** what subscribers may choose to receive, and whether the list has a public archive (docs/preferences.md) */
  topics: topicsSchema,
  public: Joi.boolean(),
});

const clock = () =>
  Joi.string()
    .pattern(/^(?:[01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$/)
    .messages({ 'string.pattern.base': '{{#label}} must be a local time "HH:MM" (00:00 to 24:00)' });

/** docs/outreach.md: when a campaign's steps may go out, in local time. */
const schedule = Joi.object({
  timezone: Joi.string()
    .required()
    .custom((zone: string, helpers) => (isTimeZone(zone) ? zone : helpers.error('any.invalid')))
    .messages({ 'any.invalid': 'timezone must be an IANA time zone such as Europe/Berlin' }),
  days: Joi.array()
    .items(Joi.number().integer().min(1).max(7).messages({ 'number.min': 'days are ISO weekdays from 1 (Monday) to 7 (Sunday)', 'number.max': 'days are ISO weekdays from 1 (Monday) to 7 (Sunday)' }))
    .min(1)
    .unique()
    .required(),
  from: clock().required(),
  to: clock().required(),
}).custom((value: { from: string; to: string }, helpers) => (minuteOfDay(value.from) < minuteOfDay(value.to) ? value : helpers.error('schedule.order')))
  .messages({ 'schedule.order': 'schedule.from must be before schedule.to' });

const rate = () => Joi.number().min(0).max(1).allow(null).messages({ 'number.min': '{{#label}} must be from 0 to 1', 'number.max': '{{#label}} must be from 0 to 1' });

/** docs/outreach.md: the rates over the last `window` emails that pause a running campaign; null turns one off. */
const pauseOn = Joi.object({
  bounce_rate: rate(),
  complaint_rate: rate(),
  window: Joi.number().integer().min(20).max(100_000),
});

const campaignFields = {
  schedule: schedule.allow(null),
  pause_on: pauseOn.allow(null),
  unsubscribe: Joi.boolean(),
  name: name(),
  goal: Joi.string().valid(...GOALS),
  mailbox: id(),
  /** docs/campaigns.md: rotation over several mailboxes (`mailbox`, when given too, must be the first) */
  mailboxes: Joi.array().items(id()).min(1).max(100),
  stages: Joi.array().items(Joi.string().trim().min(1).max(100)).max(50),
  status: Joi.string().valid(...CAMPAIGN_STATUSES),
  steps: Joi.array().items(campaignStep).min(1).max(20),
  /** opt-in (docs/analytics.md): the links of its emails through signed redirect tokens */
  track_clicks: Joi.boolean(),
  /** links campaigns: the page the placed link must point to; null removes it */
  target: Joi.object({
    url: Joi.string().trim().max(2000).uri({ scheme: ['http', 'https'] }).required().messages({ 'string.uriCustomScheme': 'target.url must be an http or https URL' }),
    anchor: Joi.string().trim().max(500).allow(''),
  }).allow(null),
};

export const campaignInput = Joi.object({
  ...campaignFields,
  account: id().required(),
  name: name().required(),
  goal: campaignFields.goal.required(),
  steps: campaignFields.steps.required(),
})
  .or('mailbox', 'mailboxes')
  .messages({ 'object.missing': 'give mailbox or mailboxes' });

export const campaignChanges = Joi.object(campaignFields).min(1).messages({ 'object.min': 'nothing to change' });

export const messagesQuery = Joi.object({
  to: Joi.string().trim().max(254),
  limit: Joi.number().integer().min(1).max(500).default(50),
  account: id(),
});

export const idParam = id().required().label('id');

/** The reads of one account's rows: `?account=<id>`. */
export const accountQuery = Joi.object({ account: id().required() });

/** A listing's `?account=`: without it, every account the caller may read (docs/teams.md). */
export const listingQuery = Joi.object({ account: id() });

/** `?status=active`: the status of an import's lines that name none (otherwise the list decides: active, or pending with double opt-in). */
export const importQuery = Joi.object({ status: Joi.string().valid(...IMPORT_STATUSES), verify: verifyMode() });

/** The emails the IMAP reader handled (docs/inbound.md), newest first. */
export const inboundQuery = Joi.object({
  mailbox: Joi.number().integer().positive(),
  unmatched: Joi.boolean(),
  // the MX's messages in this state (docs/mx.md) instead of the IMAP reader's
  status: Joi.string().valid('delivered', 'held', 'dropped', 'report'),
  account: Joi.number().integer().positive(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});
