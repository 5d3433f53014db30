import crypto from 'node:crypto';
import type { AddressObject, ParsedMail } from 'mailparser';
import { lazy } from '../lazy';
import { config } from '../config';
import { splitHeader, type SplitHeader } from '../mime-header';
import { messageIdsIn } from '../inbound/thread-ids';
import type { MxAuth } from './auth';
import type { MxMessageRow } from './repository';
import type { SpamResult } from './spam';

/**
 * What the customer receives for a message the MX took (docs/mx.md): the `inbound.received` event's data, made from
 * the stored row (so a release or a replay says what the first delivery said), with signed, expiring URLs for the raw
 * MIME and each attachment (served by apps/api's mx-files route).
 */
export interface InboundReceived {
  id: string;
  route: number | null;
  domain: string;
  hash: string | null;
  envelope: { from: string; to: string[] };
  from: string;
  to: string[];
  cc: string[];
  subject: string;
  text: string | null;
  html: string | null;
  reply_text: string | null;
  attachments: { filename: string; content_type: string; size: number; url: string }[];
  headers: { name: string; value: string }[];
  auth: MxAuth;
  spam?: SpamResult;
  raw_url: string;
  received_at: string;
}

const DAY_MS = 86_400_000;

/** mailparser (and html-to-text under it), loaded by the first message parsed: the API loads it only to serve a file or a release. */
const simpleParser = lazy(() => (require('mailparser') as typeof import('mailparser')).simpleParser);

const signature = (path: string, expires: number) => crypto.createHmac('sha256', config().secretKey).update(`mx-file:${path}:${expires}`).digest('base64url');

/** PUBLIC_URL/inbound/mx/<id>/<raw | n>?expires=&signature= */
export function mxFileUrl(id: string, file: string, expiresAt: Date): string {
  const path = `${id}/${file}`;
  const expires = Math.floor(expiresAt.getTime() / 1000);
  return `${config().publicUrl}/inbound/mx/${path}?expires=${expires}&signature=${signature(path, expires)}`;
}

export function validMxFileSignature(id: string, file: string, expires: unknown, given: unknown, now = Date.now()): boolean {
  if (typeof expires !== 'string' || typeof given !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
  if (Number(expires) * 1000 < now) return false;
  const expected = Buffer.from(signature(`${id}/${file}`, Number(expires)));
  const actual = Buffer.from(given);
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

export const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((x) => x.value).map((v) => v.address ?? '').filter(Boolean);

const QUOTE_HEADERS = [
  /^On .{1,300}wrote:\s*$/,
  /^Le .{1,300}a écrit\s*:\s*$/,
  /^Am .{1,300}schrieb .{0,200}:\s*$/,
  /^-{2,}\s*Original Message\s*-{2,}\s*$/i,
  /^-{2,}\s*Forwarded message\s*-{2,}\s*$/i,
  /^_{10,}\s*$/,
  /^From:\s.+$/,
];

/**
 * The new text of a reply, without the quoted history and the signature: everything before the first line that starts
 * a quote ("On ... wrote:", an Outlook separator, a block of `>` lines) or the signature separator "-- ".
 */
export function replyText(text: string | null): string | null {
  if (text === null) return null;
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '-- ' || line === '--') break;
    if (line.startsWith('>')) break;
    // "On Mon, 1 Jan 2026 at 10:00, Ann <ann@example.com>" may wrap before "wrote:"
    const two = `${line} ${lines[i + 1] ?? ''}`.trim();
    if (QUOTE_HEADERS.some((q) => q.test(line.trim())) || (/^On /.test(line) && /wrote:\s*$/.test(two) && !/wrote:\s*$/.test(line))) break;
    kept.push(line);
  }
  return kept.join('\n').trim();
}

/** What the session reads of a message's header: the row's From and Subject, and the Message-IDs a reply answers. */
export interface ArrivalHeaders {
  from: string;
  subject: string;
  /** In-Reply-To's and References' Message-IDs */
  threadIds: string[];
}

const SESSION_FIELDS = new Set(['from', 'subject', 'in-reply-to', 'references']);

type HeaderValues = Map<string, unknown>;
/**
 * mailparser's own reading of header fields (its `processHeaders`: encoded words, charsets, address lists), made once:
 * the session's fields read as the full parse reads them, without parsing the body.
 */
const headerReader = lazy(() => new (require('mailparser') as typeof import('mailparser')).MailParser() as unknown as { processHeaders(lines: { key: string; line: string }[]): HeaderValues });

/** The From, Subject, In-Reply-To and References of `raw` as mailparser gives them, from its header alone (docs/mx.md). */
export function arrivalHeaders(raw: Buffer, header: SplitHeader = splitHeader(raw)): ArrivalHeaders {
  const lines = header.fields.filter((f) => SESSION_FIELDS.has(f.name))
    // as mailsplit hands them to mailparser: latin1, without the last line break
    .map((f) => ({ key: f.name, line: raw.toString('latin1', f.start, f.end).replace(/\r?\n$/, '') }));
  const values = headerReader().processHeaders(lines);
  const subject = values.get('subject');
  return {
    from: addresses(values.get('from') as AddressObject | undefined)[0] ?? '',
    subject: typeof subject === 'string' ? subject : '',
    threadIds: [...messageIdsIn(values.get('in-reply-to')), ...messageIdsIn(values.get('references'))],
  };
}

/** The parsed message (mailparser) of a stored row. */
export function parse(raw: Buffer): Promise<ParsedMail> {
  return simpleParser()(raw, { skipImageLinks: true, skipTextToHtml: true });
}

/** An `inbound.received` as the session writes it: the message's id, its content built when it is sent (store.ts builtReceived). */
export const pendingReceived = (id: string) => ({ id, pending: true as const });

export async function receivedEvent(row: MxMessageRow, parsed?: ParsedMail, now = new Date()): Promise<InboundReceived> {
  const mail = parsed ?? (await parse(Buffer.from(row.raw)));
  const expires = new Date(now.getTime() + (config().retentionDays || 30) * DAY_MS);
  const text = mail.text ?? null;
  return {
    id: row.id,
    route: row.routeId,
    domain: row.domain,
    hash: row.hash,
    envelope: { from: row.mailFrom, to: row.rcptTo },
    from: addresses(mail.from)[0] ?? '',
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    subject: mail.subject ?? '',
    text,
    html: typeof mail.html === 'string' ? mail.html : null,
    reply_text: replyText(text),
    attachments: mail.attachments.map((a, i) => ({ filename: a.filename ?? '', content_type: a.contentType, size: a.size, url: mxFileUrl(row.id, String(i + 1), expires) })),
    headers: mail.headerLines.map((h) => ({ name: h.key, value: h.line.slice(h.line.indexOf(':') + 1).trim() })),
    auth: row.auth as unknown as MxAuth,
    ...(row.spam ? { spam: row.spam as unknown as SpamResult } : {}),
    raw_url: mxFileUrl(row.id, 'raw', expires),
    received_at: row.receivedAt.toISOString(),
  };
}

/** A stored message's raw MIME or its n-th attachment (1-based), for the signed URL; undefined when gone. */
export async function mxFile(row: MxMessageRow, file: string): Promise<{ filename: string; contentType: string; content: Buffer } | undefined> {
  const raw = Buffer.from(row.raw);
  if (file === 'raw') return { filename: `${row.id}.eml`, contentType: 'message/rfc822', content: raw };
  if (!/^\d{1,4}$/.test(file)) return undefined;
  const attachment = (await parse(raw)).attachments[Number(file) - 1];
  return attachment && { filename: attachment.filename ?? 'attachment', contentType: attachment.contentType, content: attachment.content };
}
