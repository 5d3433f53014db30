import { Joi } from '../validate';
import { WINNER_METRICS } from './variants';

/** The A/B inputs, shared by campaign steps and broadcasts; weights summing to 0 are refused by weightsRefusal. */
const OPENS = 'opens cannot pick a winner: privacy proxies (Apple Mail) open every email';

export const winnerInput = () =>
  Joi.object({
    metric: Joi.string()
      .valid(...WINNER_METRICS)
      .required()
      .messages({ 'any.only': `{{#label}} must be replies or clicks; ${OPENS}` }),
    after_hours: Joi.number().min(0).max(24 * 365).required(),
    min_sample: Joi.number().integer().min(1).max(1_000_000).required(),
  });

/** `body` is the step's text (a campaign) or the html (a broadcast). */
export const variantsInput = () =>
  Joi.array()
    .items(
      Joi.object({
        subject: Joi.string().trim().min(1).max(300).required(),
        body: Joi.string().min(1).max(100_000).required(),
        weight: Joi.number().min(0).max(1_000_000).default(1),
      }),
    )
    .min(2)
    .max(10);
