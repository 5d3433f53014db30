import { Joi } from '../validate';
import { templateRef } from '../templates/schema';

const tag = Joi.string().trim().min(1).max(100);
const content = {
  subject: Joi.string().trim().min(1).max(998),
  html: Joi.string().max(1_000_000).allow(null),
  text: Joi.string().max(1_000_000).allow(null),
  tags: Joi.array().items(tag).max(20).unique(),
  send_at: Joi.date().iso().allow(null),
  /** opt-in (docs/analytics.md): links through signed redirect tokens; a 1x1 image for opens */
  track_clicks: Joi.boolean(),
  track_opens: Joi.boolean(),
  /** a stored template (id or alias) rendered for each reader instead of subject, html and text (docs/templates.md) */
  template: templateRef().allow(null),
};

export interface BroadcastInput {
  list: string;
  subject?: string;
  template?: number | string | null;
  html?: string | null;
  text?: string | null;
  tags?: string[];
  send_at?: Date | null;
  track_clicks?: boolean;
  track_opens?: boolean;
}

/** POST /admin/api/broadcasts: html or text required, or a template. */
export const broadcastInput = Joi.object<BroadcastInput>({
  list: Joi.string().trim().min(1).max(100).required(),
  ...content,
  subject: content.subject.when('template', { is: Joi.exist().not(null), then: Joi.optional(), otherwise: Joi.required() }),
})
  .or('html', 'text', 'template')
  .messages({ 'object.missing': 'html or text is required (or a template)' });

export type BroadcastStatusChange = 'sending' | 'paused' | 'cancelled';

export interface BroadcastChanges extends Partial<Omit<BroadcastInput, 'list'>> {
  status?: BroadcastStatusChange;
}

/** PATCH /admin/api/broadcasts/:id: a status, or content (only while draft). */
export const broadcastChanges = Joi.object<BroadcastChanges>({
  status: Joi.string().valid('sending', 'paused', 'cancelled'),
  ...content,
}).min(1);

export const broadcastsQuery = Joi.object<{ list?: string; limit: number }>({
  list: Joi.string().trim().min(1).max(100),
  limit: Joi.number().integer().min(1).max(500).default(100),
});
