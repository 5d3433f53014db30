import { Joi } from '../validate';

/** The longest wait before a step: a year. */
export const SERIES_DELAY_HOURS_MAX = 24 * 365;
/** Steps a series may have. */
export const SERIES_STEPS_MAX = 20;

export interface SeriesStepInput {
  subject: string;
  html?: string | null;
  text?: string | null;
  /** a template's id or alias: stored with the step (docs/lists.md says how it is used) */
  template?: string | null;
  /** may be fractional; 0 = at once. Step 1 counts from the moment the person became active, each next one from the step before */
  delay_hours: number;
}

const step = Joi.object<SeriesStepInput>({
  subject: Joi.string().trim().min(1).max(998).required(),
  html: Joi.string().max(1_000_000).allow(null),
  text: Joi.string().max(1_000_000).allow(null),
  template: Joi.string().trim().min(1).max(200).allow(null),
  delay_hours: Joi.number().min(0).max(SERIES_DELAY_HOURS_MAX).required(),
})
  .or('html', 'text')
  .messages({ 'object.missing': 'each step needs html or text' });

/** A list's series (POST/PATCH /admin/api/lists `steps`): [] removes it. */
export const seriesSteps = Joi.array().items(step).max(SERIES_STEPS_MAX);
