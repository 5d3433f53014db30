import { verpAddress } from './verp';
import type Mail from 'nodemailer/lib/mailer';
import { textOf } from '../templates/content';
import type { EmailKinds } from './kinds';
import type { Mailbox, Message, Send } from '../../../../generated/prisma/client';

/** An attachment as stored on a Send: the content stays base64 until it is written to the wire. */
export interface StoredAttachment {
  filename: string;
  content: string;
  content_type?: string;
}

/** A readable plain-text part for html-only mail (html-to-text, as a template's text part is made). */
export const htmlToText = textOf;

/**
 * The email of one Message row, as nodemailer takes it: one recipient in To and in the envelope, the row's own
 * Message-ID. Copies of a Send take the content from the Send; confirmation and sequence emails carry their own, and
 * their kind's links are put in (`kinds`: the process's registrations, kinds.ts).
 */
export function composeMail(kinds: EmailKinds, message: Message, mailbox: Mailbox, send: Send | null): Mail.Options {
  const envelope = { from: mailbox.returnPath === 'verp' ? verpAddress(mailbox.address, message.id) : mailbox.address, to: [message.to] };
  // a message submitted over SMTP goes out as its client wrote it (DKIM-signed by the transport like any other); its
  // `from` is the header From its submission parsed, for the signer's d= (nodemailer writes no header into a raw message)
  const raw = send ? rawBytes(send.raw) : null;
  if (raw) return { envelope, raw, from: send!.headerFrom ?? storedHeaderFrom(raw) ?? undefined };
  // a confirmation's link and a broadcast copy's, series step's or outreach step's unsubscribe link are put in here, on
  // the way to the wire: their stored bodies hold a marker (each kind's `links`: subscribers, broadcasts, outreach)
  const own = (body: string | null) => kinds.links(body, message);
  const html = send ? send.html : own(message.html);
  // null: none was given, so one is made from the html; '' : a template said no text part (text_from_html false)
  const text = (send ? send.text : own(message.text)) ?? (html ? htmlToText(html) : undefined);
  const mail: Mail.Options = {
    from: { name: (send?.fromName || mailbox.name) ?? '', address: mailbox.address },
    to: message.to,
    envelope,
    subject: send ? send.subject : message.subject,
    text: text || undefined,
    html: html ?? undefined,
    messageId: message.messageIdHeader,
    date: new Date(),
  };
  if (send) {
    if (send.replyTo) mail.replyTo = send.replyTo;
    mail.headers = send.headers as Record<string, string>;
    mail.attachments = (send.attachments as unknown as StoredAttachment[]).map((a) => ({
      filename: a.filename,
      content: a.content,
      encoding: 'base64',
      contentType: a.content_type,
    }));
  } else {
    if (message.inReplyTo) mail.inReplyTo = message.inReplyTo;
    if (message.references) mail.references = message.references;
    // a broadcast copy's or an outreach step's own headers (List-Unsubscribe, List-Unsubscribe-Post, List-Id)
    if (message.headers) mail.headers = ownHeaders(message.headers as Mail.Headers, own);
  }
  return mail;
}

/**
 * A Send's stored MIME as bytes: Prisma reads the column as a Uint8Array, the fast claim's row_to_json as `\\x` and
 * hex; null when the send was made of fields.
 */
export function rawBytes(raw: unknown): Buffer | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'string') return raw.startsWith('\\x') ? Buffer.from(raw.slice(2), 'hex') : Buffer.from(raw, 'utf8');
  if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  return null;
}

/**
 * The address of a stored MIME's From header (its header block only), lower case; null when it has none. Only for the
 * sends submitted before their From was stored at accept (sends.header_from, migration 20261127101000_header_from):
 * every later one has it.
 */
function storedHeaderFrom(raw: Buffer): string | null {
  const text = raw.subarray(0, 64 * 1024).toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const head = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const line = /^from:(.*)$/im.exec(head)?.[1];
  const address = line ? (/<([^<>\s]+@[^<>\s]+)>/.exec(line)?.[1] ?? /([^\s<>",;]+@[^\s<>",;]+)/.exec(line)?.[1]) : undefined;
  return address ? address.toLowerCase() : null;
}

/** Stored headers (strings, or nodemailer's `{prepared, value}`) with `fill` applied to each value. */
function ownHeaders(headers: Mail.Headers, fill: (value: string) => string | null): Mail.Headers {
  const filled: Record<string, unknown> = {};
  for (const [name, header] of Object.entries(headers)) {
    if (typeof header === 'string') filled[name] = fill(header);
    else if (header && typeof header === 'object' && 'value' in header && typeof header.value === 'string') filled[name] = { ...header, value: fill(header.value) };
    else filled[name] = header;
  }
  return filled as Mail.Headers;
}
