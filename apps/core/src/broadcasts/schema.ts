import { Joi } from '../validate';

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
};

export interface BroadcastInput {
  list: string;
  subject: string;
  html?: string | null;
  text?: string | null;
  tags?: string[];
  send_at?: Date | null;
  track_clicks?: boolean;
  track_opens?: boolean;
}

/** POST /admin/api/broadcasts: html or text required. */
export const broadcastInput = Joi.object<BroadcastInput>({
  list: Joi.string().trim().min(1).max(100).required(),
  ...content,
  subject: content.subject.required(),
})
  .or('html', 'text')
  .messages({ 'object.missing': 'html or text is required' });

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
