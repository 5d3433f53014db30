import { Joi } from '../validate';

/** docs/templates.md: limits of a stored template. */
export const TEMPLATE_FIELD_LIMITS = { name: 200, alias: 100, subject: 1000, body: 512 * 1024, required: 50, versionsKept: 20 } as const;

const id = () => Joi.number().integer().positive().max(2_147_483_647);
/** An alias: letters, digits, `-` and `_`, starting with a letter or digit, not only digits (a number names an id). */
export const ALIAS = /^(?:[A-Za-z][A-Za-z0-9_-]*|[0-9][A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*)$/;
const alias = () => Joi.string().max(TEMPLATE_FIELD_LIMITS.alias).pattern(ALIAS, 'an alias (letters, digits, - and _, not only digits)');
/** A template or layout named by its id or its alias. */
export const templateRef = () => Joi.alternatives().try(id(), alias());

/**
 * A body that names a template and also gives what the template gives (subject, text or html): the refusal's words
 * (400), the same for a send and a broadcast; null when there is no template or none of those is given.
 */
export function besideTemplate(body: { template?: unknown; subject?: unknown; text?: unknown; html?: unknown }): string | null {
  if (body.template === undefined || body.template === null) return null;
  const given = (['subject', 'text', 'html'] as const).find((f) => body[f] !== undefined && body[f] !== null);
  return given ? `${given}: not with a template (the template gives it)` : null;
}
const variableName = Joi.string().pattern(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'a variable name').max(100);

const fields = {
  name: Joi.string().trim().min(1).max(TEMPLATE_FIELD_LIMITS.name),
  alias: alias().allow(null),
  subject: Joi.string().max(TEMPLATE_FIELD_LIMITS.subject).allow(''),
  html: Joi.string().max(TEMPLATE_FIELD_LIMITS.body).allow('', null),
  text: Joi.string().max(TEMPLATE_FIELD_LIMITS.body).allow('', null),
  layout: templateRef().allow(null),
  required: Joi.array().items(variableName).max(TEMPLATE_FIELD_LIMITS.required).unique(),
  inline_css: Joi.boolean(),
  text_from_html: Joi.boolean(),
};

export const templateInput = Joi.object({
  account: id().required(),
  kind: Joi.string().valid('template', 'layout').default('template'),
  ...fields,
  name: fields.name.required(),
});

export const templateChanges = Joi.object(fields).min(1).messages({ 'object.min': 'nothing to change' });

export const templatesQuery = Joi.object({ account: id(), kind: Joi.string().valid('template', 'layout') });

/** Variables of a render: a JSON object (names to values). */
export const variables = () => Joi.object().max(200).unknown(true).messages({ 'object.base': 'variables must be a JSON object' });

export const previewInput = Joi.object({ variables: variables().default({}) });

export const testSendInput = Joi.object({
  to: Joi.string().email().required(),
  variables: variables().default({}),
  /** the mailbox it goes from; the account's first mailbox when not given */
  mailbox: id(),
});

export const restoreInput = Joi.object({ version: Joi.number().integer().positive().required() });

export interface TemplateInput {
  account: number;
  kind: 'template' | 'layout';
  name: string;
  alias?: string | null;
  subject?: string;
  html?: string | null;
  text?: string | null;
  layout?: number | string | null;
  required?: string[];
  inline_css?: boolean;
  text_from_html?: boolean;
}
export type TemplateChanges = Partial<Omit<TemplateInput, 'account' | 'kind'>>;

/** GET /api/v1/templates?kind=: the key's account's templates, or only its layouts. */
export const keyTemplatesQuery = Joi.object({ kind: Joi.string().valid('template', 'layout') });
