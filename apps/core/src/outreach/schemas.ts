import { dbId, Joi } from '../validate';
import { LOST_REASONS, OUTCOME_STATES } from './outcomes';

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
  fields: Joi.object().pattern(/^[\w-]{1,100}$/, fieldValue).max(50),
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

export const outcomeInput = Joi.object({
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
