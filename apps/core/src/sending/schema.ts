import { BadRequest, Forbidden, PayloadTooLarge, Unprocessable } from '../errors';
import { Joi, email, validate } from '../validate';
import type { StoredAttachment } from '../delivery/compose';

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

/** An address field that may carry a display name: validated on the address, converted to `{name, address}`. */
const namedAddress = () =>
  Joi.string()
    .max(400)
    .custom((raw: string, helpers) => {
      const { name, address: bare } = splitNamed(raw);
      const { error, value } = address.validate(bare);
      if (error) return helpers.error('string.email', { value: raw });
      return { name, address: value as string };
    });

const CUSTOM_HEADER = /^X-[A-Za-z0-9-]{1,70}$/;

export const sendSchema = Joi.object({
  to: Joi.alternatives().try(Joi.array().items(namedAddress()).max(500), namedAddress().allow('')).required(),
  subject: Joi.string().min(1).max(SEND_LIMITS.subject).required(),
  text: Joi.string().allow(''),
  html: Joi.string().allow(''),
  from: namedAddress(),
  reply_to: namedAddress(),
  headers: Joi.object()
    .pattern(Joi.string().pattern(CUSTOM_HEADER).message('headers may only name custom X- headers'), Joi.string().max(1000).pattern(/^[^\r\n]*$/, 'one line'))
    .max(SEND_LIMITS.headers),
  attachments: Joi.array()
    .items(
      Joi.object({
        filename: Joi.string().min(1).max(255).pattern(/^[^\r\n/\\]+$/, 'a file name').required(),
        content: Joi.string().base64().allow('').required(),
        content_type: Joi.string().max(255).pattern(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'a MIME type'),
      }),
    )
    .max(SEND_LIMITS.attachments),
  send_at: Joi.date().iso(),
  metadata: Joi.object().max(50),
})
  .required()
  .messages({ 'object.base': 'the body must be a JSON object' });

interface RawSend {
  to: { name: string; address: string } | { name: string; address: string }[] | '';
  subject: string;
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
}

const format = (a: { name: string; address: string }) => (a.name ? `"${a.name.replace(/["\\]/g, '')}" <${a.address}>` : a.address);

/**
 * Validates a send body for a key whose mailbox is `mailboxAddress`: 400 for a malformed field (named), 403 for a
 * foreign `from`, 413 for an email over 1 MB, 422 when `to` names nobody.
 */
export function parseSendRequest(body: unknown, mailboxAddress: string, now = new Date()): SendRequest {
  const raw = validate<RawSend>(sendSchema, body);
  const to = [...new Set((raw.to === '' ? [] : Array.isArray(raw.to) ? raw.to : [raw.to]).map((r) => r.address))];
  if (to.length > SEND_LIMITS.recipients) throw new BadRequest(`to: at most ${SEND_LIMITS.recipients} recipients per request, got ${to.length}`);
  if (!raw.text && !raw.html) throw new BadRequest('text or html: give at least one of them');
  if (raw.from && raw.from.address !== mailboxAddress.toLowerCase()) {
    throw new Forbidden(`from: this key sends only from ${mailboxAddress}`);
  }
  if (raw.send_at && raw.send_at.getTime() > now.getTime() + SEND_LIMITS.sendAheadMs) {
    throw new BadRequest('send_at: at most 30 days ahead');
  }
  const attachments = raw.attachments ?? [];
  const bytes =
    Buffer.byteLength(raw.text ?? '') +
    Buffer.byteLength(raw.html ?? '') +
    attachments.reduce((sum, a) => sum + Buffer.from(a.content, 'base64').length, 0);
  if (bytes > SEND_LIMITS.emailBytes) throw new PayloadTooLarge(`the email is ${bytes} bytes, over the limit of 1 MB (1,048,576 bytes)`);
  if (!to.length) throw new Unprocessable('nobody to write to: to is empty');
  return {
    to,
    subject: raw.subject,
    text: raw.text || null,
    html: raw.html || null,
    fromName: raw.from ? raw.from.name : null,
    replyTo: raw.reply_to ? format(raw.reply_to) : null,
    headers: raw.headers ?? {},
    attachments,
    sendAt: raw.send_at && raw.send_at.getTime() > now.getTime() ? raw.send_at : null,
    metadata: raw.metadata ?? {},
  };
}
