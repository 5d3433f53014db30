import { seriesSteps } from '../lifecycle/schema';
import { topicsSchema } from '../topics';
import { dbId, displayName, email, Joi } from '../validate';
import type { VerifyMode } from '../verify';
import { verifyMode } from '../verify/schema';

/** docs/api.md */
export const NAME_MAX = 200;
export const TAGS_MAX = 20;
export const FIELDS_MAX = 30;
/** Bounds of our own that keep one subscriber row small (docs/lists.md). */
export const TAG_LENGTH_MAX = 100;
export const FIELD_NAME_MAX = 100;
export const FIELD_VALUE_MAX = 5000;

export type FieldValue = string | number | boolean;

export interface SubscriberInput {
  list: string;
  email: string;
  name?: string;
  tags?: string[];
  fields?: Record<string, FieldValue>;
  confirmed?: boolean;
  /** docs/verification.md: verify the address first; block_undeliverable adds nobody when it is undeliverable */
  verify?: VerifyMode;
}

export interface UnsubscribeInput {
  list: string;
  email: string;
}

/** Counts characters as people do (code points), so an emoji is one character, not two. */
const name = () =>
  Joi.string()
    .trim()
    .allow('')
    .custom((value: string, helpers) => ([...value].length > NAME_MAX ? helpers.error('string.max', { limit: NAME_MAX }) : value));

/** `tags` as an array, or one string split on whitespace. */
const tagsType = Joi.extend((joi) => ({
  type: 'tags',
  base: joi.array(),
  coerce: {
    from: 'string',
    method: (value: string) => ({ value: value.split(/\s+/).filter(Boolean) }),
  },
}));

const tags = () =>
  tagsType
    .tags()
    .items(Joi.string().trim().min(1).max(TAG_LENGTH_MAX))
    .max(TAGS_MAX)
    .messages({ 'array.max': '{{#label}} must hold at most {{#limit}} tags' });

/** A subscriber's `fields`: also what an import's `fields` column or key is checked against (imports/parse.ts). */
export const fields = () =>
  Joi.object()
    .pattern(
      Joi.string().min(1).max(FIELD_NAME_MAX),
      Joi.alternatives()
        .try(Joi.string().max(FIELD_VALUE_MAX), Joi.number(), Joi.boolean())
        .messages({ 'alternatives.types': '{{#label}} must be a string, a number or a boolean' }),
    )
    .max(FIELDS_MAX)
    .messages({ 'object.max': '{{#label}} must hold at most {{#limit}} fields' });

const listKey = () => Joi.string().trim().min(1).max(100);

export const subscriberInput = Joi.object<SubscriberInput>({
  list: listKey().required(),
  email: email().required(),
  name: name(),
  tags: tags(),
  fields: fields(),
  confirmed: Joi.boolean(),
  verify: verifyMode(),
});

export const unsubscribeInput = Joi.object<UnsubscribeInput>({
  list: listKey().required(),
  email: email().required(),
});

/** The hosted form: email and name only (the honeypot is checked before validation). */
export const formInput = Joi.object<{ email: string; name?: string }>({
  email: email().required().messages({ 'any.required': 'Please enter your email address', 'string.empty': 'Please enter your email address', 'string.email': 'Please enter a valid email address' }),
  name: name().messages({ 'string.max': `Please keep your name to ${NAME_MAX} characters` }),
}).unknown(true);

/** The admin API's lists and their subscribers (docs/lists.md, docs/preferences.md). */
export const listChanges = Joi.object({ name: displayName(), confirm: Joi.boolean(), mailbox: dbId(), steps: seriesSteps, topics: topicsSchema, public: Joi.boolean() }).min(1).messages({ 'object.min': 'nothing to change' });

/** A subscriber's statuses, as the listing filters by them (docs/lists.md). */
export const SUBSCRIBER_STATUSES = ['pending', 'active', 'unsubscribed', 'bounced', 'complained'] as const;

export const subscribersQuery = Joi.object({
  status: Joi.string().valid(...SUBSCRIBER_STATUSES),
  q: Joi.string().trim().min(1).max(254),
  after: dbId(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** The console's search across every list (docs/operator.md): part of an address, `name=value` or `tag:name`. */
export const subscriberSearch = Joi.object({ q: Joi.string().trim().max(254).label('search'), before: dbId() });

export const listInput = Joi.object({
  account: dbId().required(),
  name: displayName().required(),
  confirm: Joi.boolean().required(),
  mailbox: dbId().required(),
  /** the list's welcome series (docs/lists.md) */
  steps: seriesSteps,
  /** what subscribers may choose to receive, and whether the list has a public archive (docs/preferences.md) */
  topics: topicsSchema,
  public: Joi.boolean(),
});
