import { isEmailValid } from '@hapi/address';
import { BadRequest, Forbidden, PayloadTooLarge, Unprocessable } from '../errors';
import { DOCUMENTED, Joi, NO_NUL, dbId, documented, email, validate } from '../validate';
import type { StoredAttachment } from '../delivery/compose';
import { besideTemplate, templateRef, variables } from '../templates/schema';
import { displayNameRefusal, fromRefusal } from '../domains/sending';

/** docs/api.md: limits of one POST /api/v1/send. */
export const SEND_LIMITS = {
  recipients: 50,
  subject: 300,
  /** text + html + decoded attachments, and the request body itself (the JSON parser's limit) */
  emailBytes: 1024 * 1024,
  sendAheadMs: 30 * 24 * 3600 * 1000,
  attachments: 20,
  headers: 50,
} as const;

/** `Name <address>` or a bare address; the name is kept apart from the address. */
const NAMED = /^\s*(?:"?([^"<>]*?)"?\s*)?<([^<>]+)>\s*$/;

function splitNamed(raw: string): { name: string; address: string } {
  const match = NAMED.exec(raw);
  return match ? { name: (match[1] ?? '').trim(), address: match[2]!.trim() } : { name: '', address: raw.trim() };
}

const address = email();
/** What email() documents beside `format: email` (validate.ts). */
const BARE_PATTERN = (address.describe().metas?.[0] as Record<string, { pattern: string }>)[DOCUMENTED]!.pattern;

/**
 * The named form in the document: a display name (no quotes, brackets, line breaks), then `<address>` with a local
 * part of up to four dot-separated atoms and up to four domain labels before the TLD, each short enough that the whole
 * stays within joi's limits (64 for the local part, 254 for the address): the common shapes, not every address joi
 * takes.
 */
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?';
const NAMED_PATTERN = `^[^"<>\\r\\n\\u0000\\uD800-\\uDFFF]*<${ATEXT}{1,16}(?:\\.${ATEXT}{1,15}){0,3}@(?:${LABEL}\\.){1,4}[A-Za-z](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?>$`;

/** The longest address field, display name included. */
const NAMED_MAX = 400;

/**
 * What `address` (email() of validate.ts) does to a string, read off the schema itself: lower-case it, trim it, then at
 * most `limit` characters, and joi's email check with `options`. A change to email() stops the process here, at load,
 * until plainAddress below does what the new rules do.
 */
const ADDRESS_RULES = (() => {
  const rules = address.describe().rules as { name: string; args: Record<string, unknown> }[];
  const [trim, lower, max, check] = rules;
  const same =
    rules.length === 4 &&
    trim?.name === 'trim' &&
    trim.args.enabled === true &&
    lower?.name === 'case' &&
    lower.args.direction === 'lower' &&
    max?.name === 'max' &&
    typeof max.args.limit === 'number' &&
    check?.name === 'email';
  if (!same) throw new Error('sending/schema.ts: email() has rules plainAddress does not apply; update plainAddress');
  return { limit: max.args.limit as number, options: check.args.options as Parameters<typeof isEmailValid>[1] };
})();

/**
 * An address field's value as namedAddress converts it (`{name, address}`), for a value it accepts; undefined for any
 * other, and for a value joi refuses: joi then answers it, with its own wording. joi's string conversion lower-cases
 * (toLocaleLowerCase) before it trims, and the email rule is joi's own check (@hapi/address, joi's version of it).
 */
export function plainAddress(raw: unknown): { name: string; address: string } | undefined {
  if (typeof raw !== 'string' || !raw || raw.length > NAMED_MAX) return undefined;
  const { name, address: bare } = splitNamed(raw);
  const value = bare.toLocaleLowerCase().trim();
  return value && value.length <= ADDRESS_RULES.limit && isEmailValid(value, ADDRESS_RULES.options) ? { name, address: value } : undefined;
}

/** An address field that may carry a display name: validated on the address, converted to `{name, address}`. */
const namedAddress = (description: string) =>
  documented(
    Joi.string()
      .max(NAMED_MAX)
      .description(description)
      .custom((raw: string, helpers) => {
        // the usual address without a second joi validation (its preferences and messages prepared per call)
        const plain = plainAddress(raw);
        if (plain) return plain;
        const { name, address: bare } = splitNamed(raw);
        const { error, value } = address.validate(bare);
        if (error) return helpers.error('string.email', { value: raw });
        return { name, address: value as string };
      }),
    { anyOf: [{ type: 'string', format: 'email', maxLength: 254, pattern: BARE_PATTERN }, { type: 'string', pattern: NAMED_PATTERN }] },
  );

const CUSTOM_HEADER = /^X-[A-Za-z0-9-]{1,70}$/;

/** The two kinds of send body, as the document states them: written out, or a stored template with its variables. */
export const TEXT_OR_HTML = [
  { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'] },
  { type: 'object', properties: { html: { type: 'string', minLength: 1 } }, required: ['html'] },
];
// each branch names its fields' types (a field it forbids as `false`, absent): generated clients type each branch from its
// own properties, and an untyped branch (`required` and `not` alone) becomes one that takes anything
const PLAIN_SEND = {
  allOf: [{ type: 'object', required: ['subject'], properties: { subject: { type: 'string', minLength: 1 }, template: false } }, { anyOf: TEXT_OR_HTML }],
};
const TEMPLATE_SEND = {
  type: 'object',
  required: ['template'],
  properties: { template: { anyOf: [{ type: 'integer' }, { type: 'string', minLength: 1 }] }, subject: false, text: false, html: false },
};

const ADDRESS = '`address` or `Name <address>`';
/** Standard base64 with padding, as joi's base64 rule takes it. */
const BASE64 = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';

export const sendSchema = documented(
  Joi.object({
    to: documented(
      Joi.alternatives()
        .try(
          documented(
            Joi.array()
              .items(namedAddress(ADDRESS))
              .max(SEND_LIMITS.recipients)
              .messages({ 'array.max': `at most ${SEND_LIMITS.recipients} recipients per request` }),
            // an empty list is no malformed field: it names nobody (422)
            { minItems: 1 },
          ),
          namedAddress(ADDRESS).allow(''),
        )
        .required(),
      {
        description: `one address or a list of up to ${SEND_LIMITS.recipients} (${ADDRESS}); each gets a copy of their own. None left after suppressions and the stop list (or an empty list) answers 422`,
      },
    ),
    // required unless a template is given (parseSendRequest: joi's `when` has no JSON Schema the document could show)
    subject: Joi.string().min(1).max(SEND_LIMITS.subject),
    text: Joi.string().allow(''),
    html: Joi.string().allow(''),
    template: templateRef().description('a stored template (its id or alias) to render instead of subject, html and text (docs/templates.md); unknown: 422'),
    variables: variables().description("the template's variables (a JSON object); a required one missing: 422"),
    from: namedAddress(`the key's mailbox address (403 for another), optionally with a display name: ${ADDRESS}`),
    reply_to: namedAddress(ADDRESS),
    headers: Joi.object()
      .pattern(Joi.string().pattern(CUSTOM_HEADER).message('headers may only name custom X- headers'), Joi.string().max(1000).pattern(/^[^\r\n\0]*$/, 'one line'))
      .max(SEND_LIMITS.headers),
    attachments: Joi.array()
      .items(
        Joi.object({
          filename: Joi.string().min(1).max(255).pattern(/^[^\r\n/\\\0]+$/, 'a file name').required(),
          content: documented(Joi.string().base64().allow('').required(), { contentEncoding: 'base64', pattern: BASE64 }),
          content_type: Joi.string().max(255).pattern(/^[A-Za-z0-9_.+-]+\/[A-Za-z0-9_.+-]+(?:[ \t]*;[^\0\r\n]*)?$/, 'a MIME type'),
        }),
      )
      .max(SEND_LIMITS.attachments),
    send_at: Joi.date().iso().description('when to send (RFC 3339); at most 30 days ahead (400 otherwise); a time past sends now'),
    metadata: documented(Joi.object().max(50), { propertyNames: { pattern: NO_NUL }, additionalProperties: { $ref: '#/components/schemas/JsonValue' } }),
  })
    .required()
    .messages({ 'object.base': 'the body must be a JSON object' }),
  // checked by parseSendRequest: a subject and a text or an html that is not empty, or a template without them
  { allOf: [{ anyOf: [PLAIN_SEND, TEMPLATE_SEND] }] },
);

export interface RawSend {
  to: { name: string; address: string } | { name: string; address: string }[] | '';
  subject?: string;
  template?: number | string;
  variables?: Record<string, unknown>;
  text?: string;
  html?: string;
  from?: { name: string; address: string };
  reply_to?: { name: string; address: string };
  headers?: Record<string, string>;
  attachments?: StoredAttachment[];
  send_at?: Date;
  metadata?: Record<string, unknown>;
}

/** A send request after validation: recipients de-duplicated (lower-cased), the from name split off. */
export interface SendRequest {
  to: string[];
  subject: string;
  text: string | null;
  html: string | null;
  fromName: string | null;
  replyTo: string | null;
  headers: Record<string, string>;
  attachments: StoredAttachment[];
  sendAt: Date | null;
  metadata: Record<string, unknown>;
  /** a stored template to render into subject, html and text (acceptSend does, before the write) */
  template?: { ref: number | string; variables: Record<string, unknown> } | null;
}

const PLAIN_FIELDS = new Set(['to', 'subject', 'text', 'html']);

/**
 * The plain send, read without joi: `to` (one address or a list of up to 50, each `address` or `Name <address>`), a
 * `subject`, `text` and/or `html`, and no other field; the body of most sends. It answers what validate(sendSchema)
 * answers for that body; for any other body, or a value joi would refuse, it answers undefined and joi reads the body,
 * so every refusal is joi's, worded in one place. joi's object, alternatives and custom rules were about a sixth of the
 * API's CPU per accepted send (bench/README.md). test/sending/plain-send.test.ts checks the two agree on generated
 * bodies.
 */
export function plainSend(body: unknown): RawSend | undefined {
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype) return undefined;
  const fields = body as Record<string, unknown>;
  for (const field of Object.keys(fields)) if (!PLAIN_FIELDS.has(field)) return undefined;
  const { to, subject, text, html } = fields;
  if (typeof subject !== 'string' || !subject || subject.length > SEND_LIMITS.subject) return undefined;
  if ((text !== undefined && typeof text !== 'string') || (html !== undefined && typeof html !== 'string')) return undefined;
  let recipients: RawSend['to'] | undefined;
  if (Array.isArray(to)) {
    if (!to.length || to.length > SEND_LIMITS.recipients) return undefined;
    const list: { name: string; address: string }[] = [];
    for (const one of to) {
      const recipient = plainAddress(one);
      if (!recipient) return undefined;
      list.push(recipient);
    }
    recipients = list;
  } else {
    recipients = plainAddress(to);
  }
  if (!recipients) return undefined;
  const raw: RawSend = { to: recipients, subject };
  if (text !== undefined) raw.text = text as string;
  if (html !== undefined) raw.html = html as string;
  return raw;
}

const format = (a: { name: string; address: string }) => (a.name ? `"${a.name.replace(/["\\]/g, '')}" <${a.address}>` : a.address);

/**
 * Validates a send body for a key whose mailbox is `mailboxAddress`: 400 for a malformed field (named), 403 for a
 * foreign `from`, 413 for an email over 1 MB, 422 when `to` names nobody.
 */
export function parseSendRequest(body: unknown, mailboxAddress: string, now = new Date()): SendRequest {
  const raw = plainSend(body) ?? validate<RawSend>(sendSchema, body);
  const to = [...new Set((raw.to === '' ? [] : Array.isArray(raw.to) ? raw.to : [raw.to]).map((r) => r.address))];
  if (raw.template !== undefined) {
    const beside = besideTemplate(raw);
    if (beside) throw new BadRequest(beside);
  } else {
    if (raw.variables !== undefined) throw new BadRequest('variables: give them with a template');
    if (raw.subject === undefined) throw new BadRequest('subject is required');
    if (!raw.text && !raw.html) throw new BadRequest('text or html: give at least one of them');
  }
  // the From rule shared with every way in (domains/sending.ts); the domain's own standing is checked by acceptSend
  const foreign = raw.from ? (fromRefusal({ mailboxAddress, domains: null, requireVerified: false, domainAddresses: false }, raw.from.address) ?? displayNameRefusal(raw.from.name)) : null;
  if (foreign) throw new Forbidden(`from: ${foreign}`);
  if (raw.send_at && raw.send_at.getTime() > now.getTime() + SEND_LIMITS.sendAheadMs) {
    throw new BadRequest('send_at: at most 30 days ahead');
  }
  const attachments = raw.attachments ?? [];
  checkEmailSize({ text: raw.text ?? null, html: raw.html ?? null, attachments });
  if (!to.length) throw new Unprocessable('nobody to write to: to is empty');
  return {
    to,
    subject: raw.subject ?? '',
    text: raw.text || null,
    html: raw.html || null,
    fromName: raw.from ? raw.from.name : null,
    replyTo: raw.reply_to ? format(raw.reply_to) : null,
    headers: raw.headers ?? {},
    attachments,
    sendAt: raw.send_at && raw.send_at.getTime() > now.getTime() ? raw.send_at : null,
    metadata: raw.metadata ?? {},
    template: raw.template === undefined ? null : { ref: raw.template, variables: raw.variables ?? {} },
  };
}

/** 413 for an email (text + html + decoded attachments) over 1 MB: as given, or as a template rendered it. */
export function checkEmailSize(email: { text: string | null; html: string | null; attachments: StoredAttachment[] }): void {
  const bytes =
    Buffer.byteLength(email.text ?? '') +
    Buffer.byteLength(email.html ?? '') +
    email.attachments.reduce((sum, a) => sum + Buffer.from(a.content, 'base64').length, 0);
  if (bytes > SEND_LIMITS.emailBytes) throw new PayloadTooLarge(`the email is ${bytes} bytes, over the limit of 1 MB (1,048,576 bytes)`);
}

/** A template's rendered subject as a send's: 1 to 300 characters (422 naming the template otherwise). */
export function checkRenderedSubject(subject: string, ref: number | string): void {
  if (!subject) throw new Unprocessable(`template ${JSON.stringify(ref)}: the subject renders empty`);
  if (subject.length > SEND_LIMITS.subject) throw new Unprocessable(`template ${JSON.stringify(ref)}: the subject renders longer than ${SEND_LIMITS.subject} characters`);
}

/** PATCH /api/v1/send/:id: the send's new time (null or a time past: now), at most 30 days ahead. */
export const rescheduleSchema = Joi.object<{ send_at: Date | null }>({
  send_at: Joi.date().iso().allow(null).required().description('the new time (RFC 3339); at most 30 days ahead (400 otherwise); null or a time past sends now'),
})
  .required()
  .messages({ 'object.base': 'the body must be a JSON object' });

export function parseReschedule(body: unknown, now = new Date()): Date | null {
  const { send_at } = validate<{ send_at: Date | null }>(rescheduleSchema, body);
  if (send_at && send_at.getTime() > now.getTime() + SEND_LIMITS.sendAheadMs) throw new BadRequest('send_at: at most 30 days ahead');
  return send_at;
}

/** The admin API's latest messages: to one address, of one account. */
export const messagesQuery = Joi.object({
  to: Joi.string().trim().max(254),
  limit: Joi.number().integer().min(1).max(500).default(50),
  account: dbId(),
});
