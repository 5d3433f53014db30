import { templateRef } from '../templates/schema';
import { Joi } from '../validate';
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
  subject: Joi.string().trim().min(1).max(300).when('template', { is: Joi.exist(), then: Joi.optional(), otherwise: Joi.required() }).when('variants', { is: Joi.exist(), then: Joi.forbidden() }),
  body: Joi.string().min(1).max(100_000).when('template', { is: Joi.exist(), then: Joi.optional(), otherwise: Joi.required() }).when('variants', { is: Joi.exist(), then: Joi.forbidden() }),
  /** a stored template (id or alias) rendered instead of subject and body (docs/templates.md) */
  template: templateRef(),
  delay_hours: Joi.number().min(0).max(24 * 365).required(),
  /** the step that follows, when not the next in the list */
  next: stepId(),
  variants: variantsInput(),
  winner: winnerInput(),
})
  .oxor('template', 'variants')
  .with('winner', 'variants');

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

export const campaignStep = Joi.alternatives().conditional('.type', { is: 'condition', then: conditionStep, otherwise: emailStep });
