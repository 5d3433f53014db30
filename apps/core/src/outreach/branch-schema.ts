import { templateRef } from '../templates/schema';
import { documented, Joi } from '../validate';
import { variantsInput, winnerInput } from '../experiments/schema';
import { CONDITIONS } from './branches';

/**
 * A campaign step as the admin API takes it (docs/outreach.md): an email (subject and body, a template, or variants)
 * or a condition that sends nothing and goes on along `then` or `else`. What joi cannot see (a branch to a step that
 * does not exist, a cycle, weights summing to 0) is refused by branches.ts's stepsRefusal, 400 as well.
 */
const stepId = () =>
  Joi.string()
    .pattern(/^[A-Za-z0-9_-]{1,64}$/)
    .messages({ 'string.pattern.base': '{{#label}} must be 1 to 64 letters, digits, _ or -' });

const OPENS = 'opens are not a branch condition: privacy proxies (Apple Mail) open every email';

const emailStep = Joi.object({
  id: stepId(),
  type: Joi.string().valid('email'),
  subject: Joi.string().trim().min(1).max(300).when('template', { is: Joi.exist(), then: Joi.optional(), otherwise: Joi.required() }),
  body: Joi.string().min(1).max(100_000).when('template', { is: Joi.exist(), then: Joi.optional(), otherwise: Joi.required() }),
  /** a stored template (id or alias) rendered instead of subject and body (docs/templates.md) */
  template: templateRef(),
  delay_hours: Joi.number().min(0).max(24 * 365).required(),
  /** the step that follows, when not the next in the list */
  next: stepId(),
});

/** An email step whose subject and body are A/B variants (experiments/): no subject, body or template of its own. */
const variantStep = Joi.object({
  id: stepId(),
  type: Joi.string().valid('email'),
  delay_hours: Joi.number().min(0).max(24 * 365).required(),
  next: stepId(),
  variants: variantsInput().required(),
  winner: winnerInput(),
});

const conditionStep = Joi.object({
  id: stepId().required(),
  type: Joi.string().valid('condition').required(),
  if: Joi.string()
    .valid(...CONDITIONS)
    .required()
    .messages({ 'any.only': `{{#label}} must be one of ${CONDITIONS.join(', ')}; ${OPENS}` }),
  within_hours: Joi.number().min(0).max(24 * 365).required(),
  then: stepId().required(),
  else: stepId().required(),
});

/**
 * The three kinds as JSON Schema, for the OpenAPI document: joi-to-json writes the conditional's branches but not the
 * "subject and body required unless a template is given" of the email step inside it.
 */
const ID = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' };
const HOURS = { type: 'number', minimum: 0, maximum: 24 * 365 };
const TEXT = (max: number) => ({ type: 'string', minLength: 1, maxLength: max });
const TEMPLATE = {
  anyOf: [
    { type: 'integer', exclusiveMinimum: 0, maximum: 2_147_483_647 },
    { type: 'string', maxLength: 100, pattern: '^(?:[A-Za-z][A-Za-z0-9_-]*|[0-9][A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*)$' },
  ],
};
const VARIANTS = {
  type: 'array',
  minItems: 2,
  maxItems: 10,
  items: {
    type: 'object',
    properties: { subject: TEXT(300), body: TEXT(100_000), weight: { type: 'number', default: 1, minimum: 0, maximum: 1_000_000 } },
    required: ['subject', 'body'],
    additionalProperties: false,
  },
};
const WINNER = {
  type: 'object',
  properties: { metric: { type: 'string', enum: ['replies', 'clicks'] }, after_hours: HOURS, min_sample: { type: 'integer', minimum: 1, maximum: 1_000_000 } },
  required: ['metric', 'after_hours', 'min_sample'],
  additionalProperties: false,
};
const STEP_JSON = {
  oneOf: [
    {
      type: 'object',
      properties: { id: ID, type: { const: 'condition' }, if: { type: 'string', enum: [...CONDITIONS] }, within_hours: HOURS, then: ID, else: ID },
      required: ['id', 'type', 'if', 'within_hours', 'then', 'else'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { id: ID, type: { const: 'email' }, delay_hours: HOURS, next: ID, variants: VARIANTS, winner: WINNER },
      required: ['delay_hours', 'variants'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { id: ID, type: { const: 'email' }, subject: TEXT(300), body: TEXT(100_000), template: TEMPLATE, delay_hours: HOURS, next: ID },
      required: ['delay_hours'],
      allOf: [{ anyOf: [{ required: ['subject'] }, { required: ['template'] }] }, { anyOf: [{ required: ['body'] }, { required: ['template'] }] }],
      additionalProperties: false,
    },
  ],
};

export const campaignStep = documented(
  Joi.alternatives().conditional('.type', {
    is: 'condition',
    then: conditionStep,
    otherwise: Joi.alternatives().conditional('.variants', { is: Joi.exist(), then: variantStep, otherwise: emailStep }),
  }),
  STEP_JSON,
);
