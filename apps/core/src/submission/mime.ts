import addressparser from 'nodemailer/lib/addressparser';
import { splitHeader, type HeaderField } from '../mime-header';

/**
 * A message as an SMTP client wrote it, made ready to store and deliver: the MIME is kept byte for byte (attachments,
 * alternative parts, custom headers), but for the Bcc header, which is removed (every copy would show it), and a
 * Message-ID and a Date put in front when the client wrote none (RFC 5322 wants both; the service's copies carry them).
 */
export interface PreparedMessage {
  raw: Buffer;
  /** the header From's address, lower-cased (the key must be allowed to send from it) */
  from: string;
  fromName: string;
  /** decoded (RFC 2047), for the service's own records; empty when the message has none */
  subject: string;
  /** the client's Message-ID, or null when it wrote none (then the one put in is the send's) */
  messageId: string | null;
  /** the Message-ID the message carries on the wire: the client's, or the one put in; each copy is stored with it */
  messageIdHeader: string;
  /** the addresses of its Reply-To and Sender fields, lower-cased */
  replyAddresses: string[];
}

/** Why a message cannot be taken as written: answered 550 5.6.0 (or 5.6.x) with these words. */
export class MalformedMessage extends Error {
  override name = 'MalformedMessage';
}

/** RFC 5322 2.1.1: a line is at most 998 characters, CRLF excluded. */
export const MAX_LINE = 998;

/**
 * Refuses what RFC 5321 and 5322 do not allow in a message and could be read two ways by the servers it goes to: a
 * line feed without its carriage return (the basis of SMTP smuggling) anywhere, and lines over 998 characters from
 * `from` on (the body; long header fields are folded instead: foldLongField).
 */
export function checkLines(data: Buffer, from = 0): void {
  let lineStart = 0;
  for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) {
    if (i === 0 || data[i - 1] !== 13) throw new MalformedMessage('5.6.0 a bare LF in the message: every line must end with CRLF');
    if (lineStart >= from && i - 1 - lineStart > MAX_LINE) throw new MalformedMessage(`5.6.0 a line over ${MAX_LINE} characters (RFC 5322 2.1.1)`);
    lineStart = i + 1;
  }
  if (lineStart >= from && data.length - lineStart > MAX_LINE) throw new MalformedMessage(`5.6.0 a line over ${MAX_LINE} characters (RFC 5322 2.1.1)`);
}

/**
 * A header field (its text, CRLFs included) whose lines are within 998 characters: a longer line is folded after
 * commas or before spaces (RFC 5322 3.2.2: folding changes no meaning), as clients that write a To of fifty
 * addresses on one line need. A line with nowhere to fold is refused.
 */
export function foldLongField(field: string): string {
  const lines = field.split('\r\n');
  const folded = lines.map((line) => {
    let rest = line;
    const out: string[] = [];
    while (rest.length > MAX_LINE) {
      const window = rest.slice(0, MAX_LINE);
      const comma = window.lastIndexOf(',');
      const space = window.lastIndexOf(' ');
      const at = comma > 0 && comma + 1 < rest.length ? comma + 1 : space > 0 ? space : -1;
      if (at <= 0) throw new MalformedMessage(`5.6.0 a header line over ${MAX_LINE} characters with nowhere to fold it`);
      out.push(rest.slice(0, at));
      const next = rest.slice(at);
      rest = next.startsWith(' ') || next.startsWith('\t') ? next : ` ${next}`;
    }
    out.push(rest);
    return out.join('\r\n');
  });
  return folded.join('\r\n');
}

/** `=?charset?B|Q?...?=` words decoded (UTF-8 and Latin-1; other charsets as Latin-1), whitespace between them dropped. */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[BbQq]\?[^?]*\?=)\s+(?==\?[^?]+\?[BbQq]\?[^?]*\?=)/g, '$1')
    .replace(/=\?([^?*]+)(?:\*[^?]*)?\?([BbQq])\?([^?]*)\?=/g, (_whole, charset: string, encoding: string, text: string) => {
      const bytes =
        encoding.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64')
          : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
      return /^utf-?8$/i.test(charset) ? bytes.toString('utf8') : bytes.toString('latin1');
    });
}

/** RFC 5322 date-time in UTC, e.g. `Thu, 26 Nov 2026 19:29:49 +0000`. */
export function rfc5322Date(now: Date): string {
  return now.toUTCString().replace(/GMT$/, '+0000');
}

/**
 * Prepares `data` (the DATA the client sent, without the final dot line): `id` and `domain` make the Message-ID put in
 * when it has none (`<id@domain>`, the form of the service's own).
 */
export function prepareMessage(data: Buffer, options: { id: string; domain: string; now?: Date }): PreparedMessage {
  // the header ends at the first empty line; a message of headers only has none
  const split = splitHeader(data);
  checkLines(data, split.end);
  if (split.malformedAt !== null) throw new MalformedMessage('5.6.0 the message header is malformed (a line is neither a field nor a folded one)');
  const header = data.subarray(0, split.end).toString('latin1');
  const fields = split.fields;
  const value = (field: HeaderField) => {
    const text = header.slice(field.start, field.end);
    return Buffer.from(text.slice(text.indexOf(':') + 1), 'latin1').toString('utf8').replace(/\r\n/g, '').trim();
  };
  const one = (name: string) => {
    const found = fields.filter((f) => f.name === name);
    if (found.length > 1) throw new MalformedMessage(`5.6.0 the message has ${found.length} ${name} fields; RFC 5322 allows one`);
    return found[0];
  };
  const fromField = one('from');
  if (!fromField) throw new MalformedMessage('5.6.0 the message has no From field');
  const from = addressparser(value(fromField), { flatten: true });
  if (from.length !== 1 || !from[0]!.address) throw new MalformedMessage('5.6.0 the From field must name exactly one address');
  const subjectField = one('subject');
  const idField = one('message-id');
  const messageId = idField ? value(idField) : null;
  // each copy is stored and found by it (an index entry): a line's worth is room for any real one
  if (messageId && messageId.length > MAX_LINE) throw new MalformedMessage(`5.6.0 the Message-ID is longer than ${MAX_LINE} characters`);
  const added: string[] = [];
  const putIn = `<${options.id}@${options.domain}>`;
  if (!messageId) added.push(`Message-ID: ${putIn}\r\n`);
  if (!one('date')) added.push(`Date: ${rfc5322Date(options.now ?? new Date())}\r\n`);
  // the header without its Bcc fields and with long lines folded, the body as written
  const parts: Buffer[] = [Buffer.from(added.join(''), 'latin1')];
  let copied = 0;
  let changed = added.length > 0;
  for (const field of fields) {
    const text = header.slice(field.start, field.end);
    const long = text.split('\r\n').some((line) => line.length > MAX_LINE);
    if (field.name !== 'bcc' && !long) continue;
    parts.push(data.subarray(copied, field.start));
    if (field.name !== 'bcc') parts.push(Buffer.from(foldLongField(text), 'latin1'));
    copied = field.end;
    changed = true;
  }
  parts.push(data.subarray(copied));
  return {
    raw: changed ? Buffer.concat(parts) : data,
    from: from[0]!.address.toLowerCase(),
    fromName: decodeWords(from[0]!.name ?? ''),
    subject: subjectField ? decodeWords(value(subjectField)).slice(0, 300) : '',
    messageId: messageId || null,
    messageIdHeader: messageId || putIn,
    replyAddresses: fields
      .filter((f) => f.name === 'reply-to' || f.name === 'sender')
      .flatMap((f) => addressparser(value(f), { flatten: true }).map((a) => (a.address ?? '').toLowerCase()))
      .filter(Boolean),
  };
}
