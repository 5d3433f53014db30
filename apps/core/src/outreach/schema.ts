import { dbId, displayName, documented, Joi } from '../validate';
import { verifyMode } from '../verify/schema';
import { campaignStep } from './branch-schema';
import { CAMPAIGN_STATUSES, GOALS } from './campaigns';
import { LOST_REASONS, OUTCOME_STATES } from './outcomes';
import { isTimeZone, minuteOfDay } from './windows';

/**
 * Inputs of the public prospect requests (docs/outreach.md). POST /prospects checks the request around its items
 * (`addProspectsRequest`), then each item alone against `prospectInput`: a bad item answers `invalid`, never a 400.
 */
const campaignId = () => dbId().required();
export const MAX_PROSPECTS_PER_REQUEST = 100;

const contactText = () => Joi.string().allow('', null).max(2000);
const fieldValue = Joi.alternatives(Joi.string().allow('').max(10_000), Joi.number(), Joi.boolean(), Joi.valid(null));

export const prospectInput = Joi.object({
  email: contactText(),
  site: contactText(),
  name: Joi.string().allow('', null).max(200),
  fields: Joi.object().pattern(/^[A-Za-z0-9_-]{1,100}$/, fieldValue).max(50),
});

const prospectsOf = (item: Joi.Schema) =>
  Joi.object({
    campaign: campaignId(),
    prospects: Joi.array()
      .items(item)
      .min(1)
      .max(MAX_PROSPECTS_PER_REQUEST)
      .required()
      .messages({ 'array.max': `at most ${MAX_PROSPECTS_PER_REQUEST} prospects per request` }),
    verify: verifyMode(),
  });

/** The request as the OpenAPI document describes it: what a good item looks like. */
export const addProspectsInput = prospectsOf(prospectInput);

/** The request as checked before its items, each of which is then checked alone (a bad one is `invalid`). */
export const addProspectsRequest = prospectsOf(Joi.any());

export const prospectQuery = Joi.object({
  campaign: campaignId(),
  email: Joi.string().trim().min(1).max(254),
  site: Joi.string().trim().min(1).max(2000),
})
  .xor('email', 'site')
  .messages({ 'object.missing': 'give email or site', 'object.xor': 'give email or site, not both' });

const outcomeRules = Joi.object({
  campaign: campaignId(),
  email: Joi.string().trim().min(1).max(254).required(),
  state: Joi.string().valid(...OUTCOME_STATES),
  reason: Joi.string().valid(...LOST_REASONS),
  value: Joi.number().min(0).max(1e12),
  url: Joi.string().trim().max(2000).uri({ scheme: ['http', 'https'] }).messages({ 'string.uriCustomScheme': 'url must be an http or https URL' }),
})
  .or('state', 'value', 'url')
  .messages({ 'object.missing': 'give a state, a value, a url or some of them' })
  .when(Joi.object({ state: Joi.exist().invalid('agreed') }).unknown(), {
    then: Joi.object({ url: Joi.forbidden().messages({ 'any.unknown': 'url goes only with state agreed, or alone' }) }),
  })
  .when(Joi.object({ state: Joi.valid('lost').required() }).unknown(), {
    then: Joi.object({ reason: Joi.required().messages({ 'any.required': `lost needs a reason: one of ${LOST_REASONS.join(', ')}` }) }),
    otherwise: Joi.object({ reason: Joi.forbidden().messages({ 'any.unknown': 'reason goes only with state lost' }) }),
  });

/** The combinations outcomeRules takes, one object each, so the document (and the typed client) can say them. */
const ABSENT = false;
const otherStates = OUTCOME_STATES.filter((s) => s !== 'lost' && s !== 'agreed');
const combinations = [
  { properties: { state: { const: 'lost' }, reason: { enum: LOST_REASONS }, url: ABSENT }, required: ['state', 'reason'] },
  { properties: { state: { const: 'agreed' }, reason: ABSENT }, required: ['state'] },
  { properties: { state: { enum: otherStates }, reason: ABSENT, url: ABSENT }, required: ['state'] },
  { properties: { state: ABSENT, reason: ABSENT, value: { type: 'number' } }, required: ['value'] },
  { properties: { state: ABSENT, reason: ABSENT, url: { type: 'string' } }, required: ['url'] },
].map((c) => ({ type: 'object', ...c }));

/**
 * POST /prospects/state: a state, a value, a url or some of them; `reason` only with (and required by) `lost`; `url`
 * only with `agreed` or without a state.
 */
export const outcomeInput = documented(outcomeRules, { anyOf: null, allOf: [{ anyOf: combinations }] });

/** The admin API's campaigns (docs/campaigns.md, docs/outreach.md). */
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
  name: displayName(),
  goal: Joi.string().valid(...GOALS),
  mailbox: dbId(),
  /** docs/campaigns.md: rotation over several mailboxes (`mailbox`, when given too, must be the first) */
  mailboxes: Joi.array().items(dbId()).min(1).max(100),
  stages: Joi.array().items(Joi.string().trim().min(1).max(100)).max(50),
  status: Joi.string().valid(...CAMPAIGN_STATUSES),
  steps: Joi.array().items(campaignStep).min(1).max(20).messages({ 'array.min': 'steps: a campaign keeps at least one step' }),
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
  account: dbId().required(),
  name: displayName().required(),
  goal: campaignFields.goal.required(),
  steps: campaignFields.steps.required(),
})
  .or('mailbox', 'mailboxes')
  .messages({ 'object.missing': 'give mailbox or mailboxes' });

export const campaignChanges = Joi.object(campaignFields).min(1).messages({ 'object.min': 'nothing to change' });
