import { randomUUID } from 'node:crypto';
import type Mail from 'nodemailer/lib/mailer';
import MimeNode from 'nodemailer/lib/mime-node';
import * as base64 from 'nodemailer/lib/base64';
import * as mimeFuncs from 'nodemailer/lib/mime-funcs';
import * as qp from 'nodemailer/lib/qp';

/**
 * The MIME of the common email (one recipient, text and/or html, string headers, no attachments), written here in one
 * synchronous pass with the same bytes nodemailer's MailComposer writes (test/sending/wire-mime.test.ts compares them
 * on many shapes), and handed to nodemailer's pool as they are (transport.ts `send`). MailComposer streams every node
 * through Transform streams with a tick each: in a microbenchmark a broadcast copy cost 0.19 to 0.24 ms of CPU that
 * way, against 0.11 to 0.12 ms written here and sent as `raw` through sendMail (the delivery bench's worker figures:
 * bench/README.md). Every value is encoded by nodemailer's own
 * functions (a node's `encodeHeaderValue`, `foldLines`, the QP and base64 encoders): only the layout is written here.
 * Anything else (attachments, a body over 64 KB, a header nodemailer writes itself) is left to nodemailer, whole.
 */

/** The fields composeMail gives (compose.ts), with the signer's (domains/sending.ts); any other sends the email to nodemailer. */
const FIELDS = new Set(['from', 'to', 'envelope', 'subject', 'text', 'html', 'messageId', 'date', 'replyTo', 'inReplyTo', 'references', 'headers', 'attachments', 'dkimOnTheWay']);

/** Custom header names nodemailer writes itself or treats apart (lower case): an email with one goes to nodemailer. */
const OWN_HEADERS = /^(content-.*|from|sender|to|cc|bcc|reply-to|in-reply-to|references|subject|message-id|date|mime-version|otp-token|x-mailer)$/;

/**
 * The largest body written here: nodemailer's QP encoder works in slices of 64 KiB, and within one slice its output is
 * `wrap(encode(bytes))` (qp/index.js `_encodeSlice`).
 */
const BODY_MAX_BYTES = 64 * 1024;

/** The root headers nodemailer sets from the mail's fields, in its order (mail-composer `compile`). */
const FIELD_HEADERS = [
  ['From', 'from'], ['To', 'to'], ['Reply-To', 'replyTo'], ['In-Reply-To', 'inReplyTo'], ['References', 'references'],
  ['Subject', 'subject'], ['Message-ID', 'messageId'], ['Date', 'date'],
] as const;

/** The parts of a node this module uses: `encodeHeaderValue` is public (nodemailer documents it for this); the two others are its own rules for a header name and a text's encoding. */
interface HeaderEncoder {
  encodeHeaderValue(key: string, value: unknown): string;
  _normalizeHeaderKey(key: string): string;
  _getTextEncoding(value: string): 'Q' | 'B';
}

const node = new MimeNode() as unknown as HeaderEncoder;
/** Whether this nodemailer has what the module uses: when it does not, every email goes through nodemailer. */
const usable = (['encodeHeaderValue', '_normalizeHeaderKey', '_getTextEncoding'] as const).every((name) => typeof node[name] === 'function');

/** The bytes MailComposer would write for `mail` (its boundary aside), or null when the mail is not of the common shape. */
export function wireMime(mail: Mail.Options): Buffer | null {
  if (!usable || !commonShape(mail)) return null;
  const custom = customHeaders(mail.headers);
  if (!custom) return null;
  const text = mail.text ? bodyOf(mail.text as string) : undefined;
  const html = mail.html ? bodyOf(mail.html as string) : undefined;
  if (text === null || html === null || (!text && !html)) return null;

  const head = custom;
  for (const [key, field] of FIELD_HEADERS) if (mail[field]) header(head, key, mail[field]);
  if (!text || !html) {
    const { type, encoding, body } = text ? { type: 'text/plain', ...text } : { type: 'text/html', ...html! };
    head.push(`Content-Transfer-Encoding: ${encoding}`, 'MIME-Version: 1.0', `Content-Type: ${type}; charset=utf-8`);
    return Buffer.concat([Buffer.from(head.join('\r\n') + '\r\n\r\n', 'utf8'), body, lastNewline(body)]);
  }
  const boundary = `--_NmP-${randomHex()}-Part_1`;
  head.push('MIME-Version: 1.0', mimeFuncs.foldLines(`Content-Type: multipart/alternative; boundary="${boundary}"`, 76));
  return Buffer.concat([
    Buffer.from(`${head.join('\r\n')}\r\n\r\n--${boundary}\r\n${partHead('text/plain', text.encoding)}`, 'utf8'),
    text.body,
    Buffer.from(`\r\n--${boundary}\r\n${partHead('text/html', html.encoding)}`, 'latin1'),
    html.body,
    Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1'),
  ]);
}

function commonShape(mail: Mail.Options): boolean {
  for (const key of Object.keys(mail)) if (!FIELDS.has(key)) return false;
  if (mail.attachments && mail.attachments.length) return false;
  if (mail.text !== undefined && typeof mail.text !== 'string') return false;
  if (mail.html !== undefined && typeof mail.html !== 'string') return false;
  // nodemailer makes a Message-ID and a Date of its own when they are missing
  return typeof mail.messageId === 'string' && mail.messageId !== '' && mail.date instanceof Date;
}

/** The custom headers' lines, as MimeNode's buildHeaders writes them; null when one is not a plain or prepared string. */
function customHeaders(headers: Mail.Options['headers']): string[] | null {
  const lines: string[] = [];
  if (!headers) return lines;
  // nodemailer reads {key, value} and arrays as header lists
  if (Array.isArray(headers) || 'key' in headers || 'value' in headers) return null;
  for (const [name, given] of Object.entries(headers)) {
    const key = node._normalizeHeaderKey(name);
    if (!key || OWN_HEADERS.test(key.toLowerCase())) return null;
    if (typeof given === 'string') {
      header(lines, key, given);
      continue;
    }
    if (!given || typeof given !== 'object' || Array.isArray(given) || given instanceof Date) return null;
    const { value, prepared, ...options } = given as { value?: unknown; prepared?: unknown };
    if (typeof value !== 'string' || Object.keys(options).length) return null;
    if (!value.trim()) continue;
    if (prepared) lines.push(`${key}: ${value}`);
    else header(lines, key, value);
  }
  return lines;
}

/** One header line (folded), unless its encoded value is blank: nodemailer skips those. */
function header(lines: string[], key: string, value: unknown): void {
  const encoded = node.encodeHeaderValue(key, value);
  if (encoded.trim()) lines.push(mimeFuncs.foldLines(`${key}: ${encoded}`, 76));
}

/** A text body as MimeNode sends it (getTransferEncoding, then its encoder); null when it is over BODY_MAX_BYTES. */
function bodyOf(content: string): { encoding: string; body: Buffer } | null {
  const bytes = Buffer.from(content, 'utf8');
  if (bytes.length > BODY_MAX_BYTES) return null;
  if (mimeFuncs.isPlainText(content) && !mimeFuncs.hasLongerLines(content, 76)) return { encoding: '7bit', body: bytes };
  if (node._getTextEncoding(content) === 'Q') return { encoding: 'quoted-printable', body: Buffer.from(qp.wrap(qp.encode(bytes), 76), 'latin1') };
  return { encoding: 'base64', body: Buffer.from(base64.wrap(base64.encode(bytes), 76), 'latin1') };
}

function partHead(type: string, encoding: string): string {
  return `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n`;
}

/** What nodemailer's LastNewline adds: a message ends with a line break. */
function lastNewline(body: Buffer): Buffer {
  const last = body.length ? body[body.length - 1] : undefined;
  return Buffer.from(last === 0x0a ? '' : last === 0x0d ? '\n' : '\r\n', 'latin1');
}

/**
 * 16 random hex digits, as nodemailer's boundaries have: from a UUID (Node keeps a buffer of random bytes for those;
 * its version digit is the 13th of the 16), where one randomBytes call an email would cost more than its headers.
 */
function randomHex(): string {
  const uuid = randomUUID();
  return uuid.slice(0, 8) + uuid.slice(9, 13) + uuid.slice(14, 18);
}
