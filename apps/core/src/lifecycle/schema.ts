import { templateRef } from '../templates/schema';
import { Joi } from '../validate';

/** The longest wait before a step: a year. */
export const SERIES_DELAY_HOURS_MAX = 24 * 365;
/** Steps a series may have. */
export const SERIES_STEPS_MAX = 20;

export interface SeriesStepInput {
  /** required unless the step names a template */
  subject?: string;
  html?: string | null;
  text?: string | null;
  /**
   * a stored template of the list's account (id or alias), resolved to its id when the list is saved and rendered
   * for each person instead of subject, html and text, as a broadcast built on a template is (docs/lists.md)
   */
  template?: number | string | null;
  /** may be fractional; 0 = at once. Step 1 counts from the moment the person became active, each next one from the step before */
  delay_hours: number;
}

const withTemplate = { is: Joi.exist().not(null), then: Joi.optional(), otherwise: Joi.required() };

const step = Joi.object<SeriesStepInput>({
  subject: Joi.string().trim().min(1).max(998).when('template', withTemplate),
  html: Joi.string().max(1_000_000).allow(null),
  text: Joi.string().max(1_000_000).allow(null),
  template: templateRef().allow(null),
  delay_hours: Joi.number().min(0).max(SERIES_DELAY_HOURS_MAX).required(),
})
  .or('html', 'text', 'template')
  .messages({ 'object.missing': 'each step needs html or text (or a template)' });

/** A list's series (POST/PATCH /admin/api/lists `steps`): [] removes it. */
export const seriesSteps = Joi.array().items(step).max(SERIES_STEPS_MAX);
