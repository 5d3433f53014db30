import { Joi } from '../validate';
import { templateRef } from '../templates/schema';
import { variantsInput, winnerInput } from '../experiments/schema';
import type { Variant, WinnerRule } from '../experiments/variants';
import { FIELD_NAME_MAX, FIELD_VALUE_MAX, FIELDS_MAX, type FieldValue } from '../subscribers/schema';
import { TOPIC_ID, TOPICS_MAX } from '../topics';

const tag = Joi.string().trim().min(1).max(100);
const fieldValue = Joi.alternatives().try(Joi.string().max(FIELD_VALUE_MAX), Joi.number(), Joi.boolean());
const broadcastRef = Joi.number().integer().min(1).max(2_147_483_647);

/** Engagement with an earlier broadcast of the account: opened or clicked it, or got it and did not. */
export interface Engagement {
  opened?: number;
  clicked?: number;
  not_opened?: number;
  not_clicked?: number;
}

/**
 * Who of the list a broadcast goes to (docs/broadcasts.md): every condition given must hold, on top of being active
 * and neither suppressed nor stop-listed.
 */
export interface AudienceInput {
  tags?: string[];
  /** a field's value, or one of several (`{in: [...]}`) */
  fields?: Record<string, FieldValue | { in: FieldValue[] }>;
  engaged?: Engagement;
  /** added to the list at or after / before this time */
  subscribed_after?: Date;
  subscribed_before?: Date;
}

export const audience = Joi.object<AudienceInput>({
  tags: Joi.array().items(tag).max(20).unique(),
  fields: Joi.object()
    .pattern(Joi.string().min(1).max(FIELD_NAME_MAX), Joi.alternatives().try(fieldValue, Joi.object({ in: Joi.array().items(fieldValue).min(1).max(100).required() })))
    .max(FIELDS_MAX),
  engaged: Joi.object({ opened: broadcastRef, clicked: broadcastRef, not_opened: broadcastRef, not_clicked: broadcastRef }).min(1),
  subscribed_after: Joi.date().iso(),
  subscribed_before: Joi.date().iso(),
});
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
  /** a segment of the list; null: the whole list (less `tags`) */
  audience: audience.allow(null),
  /** the list's topics it is for (docs/preferences.md): it goes to those in any of them; [] the whole list */
  topics: Joi.array().items(Joi.string().pattern(TOPIC_ID)).max(TOPICS_MAX).unique(),
  /** shown on the list's public archive page and feed */
  archive: Joi.boolean(),
  /** an A/B test (docs/broadcasts.md): variants instead of subject, html and text; `body` is html */
  variants: variantsInput().allow(null),
  winner: winnerInput().allow(null),
  /** the share of the audience that gets the test first; the rest gets the winner */
  test_share: Joi.number().greater(0).less(1).allow(null),
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
  audience?: AudienceInput | null;
  topics?: string[];
  archive?: boolean;
  variants?: Variant[] | null;
  winner?: WinnerRule | null;
  test_share?: number | null;
}

/** POST /admin/api/broadcasts: html or text required, or a template, or variants. */
export const broadcastInput = Joi.object<BroadcastInput>({
  list: Joi.string().trim().min(1).max(100).required(),
  ...content,
})
  // a subject and html or text, or a template, or variants (which give no subject of their own: ab.ts refuses one)
  .or('subject', 'template', 'variants')
  .or('html', 'text', 'template', 'variants')
  .oxor('tags', 'audience')
  .messages({ 'object.missing': 'give a subject and html or text (or a template, or variants)', 'object.oxor': 'give tags at the top or in audience, not both' });

/** POST /admin/api/broadcasts/audience: how many a broadcast to this audience of the list would reach now. */
export const audienceQuery = Joi.object<{ list: string; audience?: AudienceInput; topics?: string[] }>({
  list: Joi.string().trim().min(1).max(100).required(),
  audience: audience.default({}),
  topics: content.topics,
});

export type BroadcastStatusChange = 'sending' | 'paused' | 'cancelled';

export interface BroadcastChanges extends Partial<Omit<BroadcastInput, 'list'>> {
  status?: BroadcastStatusChange;
}

/** PATCH /admin/api/broadcasts/:id: a status, or content (only while draft). */
export const broadcastChanges = Joi.object<BroadcastChanges>({
  status: Joi.string().valid('sending', 'paused', 'cancelled'),
  ...content,
})
  .min(1)
  .oxor('tags', 'audience')
  .messages({ 'object.oxor': 'give tags at the top or in audience, not both' });

export const broadcastsQuery = Joi.object<{ list?: string; limit: number }>({
  list: Joi.string().trim().min(1).max(100),
  limit: Joi.number().integer().min(1).max(500).default(100),
});
