import crypto from 'node:crypto';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import type { Db, Tx } from '../db';
import { emitEvent } from '../events';
import { newId } from '../ids';
import type { InboundMail } from './classify';
import {
  attachmentContent,
  receivedById,
  attachmentsOf,
  insertAttachments,
  receivedAfter,
  recordBody,
  replyLinks,
  type AttachmentRow,
  type ReceivedRow,
} from './repository';

/**
 * Inbound mail as events (docs/inbound-events.md). Every email read from a mailbox's INBOX that is a reply or a message
 * (not a delivery or feedback report) becomes `message.received`, written in the transaction that claims the email
 * (handle.ts: the row unique on mailbox, UIDVALIDITY and UID), so each email is one event whatever restarts or
 * Redis losses happen. Its body stays on the inbound_messages row and its attachments in inbound_attachments (Postgres
 * bytea), both deleted with the row after RETENTION_DAYS; attachments are served through signed URLs. An attachment over
 * INBOUND_ATTACHMENT_MAX_BYTES keeps its name, type and size only; an email that is not valid MIME keeps its raw bytes.
 */

export interface ReceivedAttachment {
  filename: string;
  content_type: string;
  size: number;
  /** signed, expiring; null for an attachment kept as metadata only (over the size cap) */
  url: string | null;
}

export interface ReceivedMessage {
  id: number;
  mailbox: number;
  kind: string;
  from: string;
  to: string;
  subject: string;
  text: string | null;
  html: string | null;
  attachments: ReceivedAttachment[];
  in_reply_to: { message?: string; send?: string; prospect?: number; campaign?: number };
  /** not valid MIME: `text` holds its bytes as read, and the raw email is kept */
  invalid: boolean;
  received_at: Date;
}

const DAY_MS = 86_400_000;
/** URLs answered by reads (the API, MCP, the console) last a day; a new read gives new ones. */
const READ_URL_MS = DAY_MS;

const signature = (id: string, expires: number) => crypto.createHmac('sha256', config().secretKey).update(`inbound-file:${id}:${expires}`).digest('base64url');

/** PUBLIC_URL/inbound/files/<id>?expires=<unix seconds>&signature=<HMAC-SHA256 under SECRET_KEY>. */
export function attachmentUrl(id: string, expiresAt: Date): string {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  return `${config().publicUrl}/inbound/files/${id}?expires=${expires}&signature=${signature(id, expires)}`;
}

/** Is this a URL we signed for this attachment, not expired at `now`? */
export function validAttachmentSignature(id: string, expires: unknown, given: unknown, now = Date.now()): boolean {
  if (typeof expires !== 'string' || typeof given !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
  if (Number(expires) * 1000 < now) return false;
  const expected = Buffer.from(signature(id, Number(expires)));
  const actual = Buffer.from(given);
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

/** The signed file's content, or undefined (a bad or expired signature, or gone: retention, metadata only). */
export async function signedAttachment(db: Db, id: string, query: { expires?: unknown; signature?: unknown }) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return undefined;
  if (!validAttachmentSignature(id, query.expires, query.signature)) return undefined;
  return attachmentContent(db, id);
}

/** The event's URLs last as long as the attachment is kept (RETENTION_DAYS; 30 days when kept for ever). */
const eventUrlExpiry = (receivedAt: Date) => new Date(receivedAt.getTime() + (config().retentionDays || 30) * DAY_MS);

/** Stores the email's body and attachments on its claimed row and writes `message.received`, in the claim's transaction. */
export async function recordReceived(
  tx: Tx,
  inboundId: number,
  mailbox: Mailbox,
  mail: InboundMail,
  links: { kind: string; prospectId: number | null; relatedId: string | null },
  raw: Buffer | undefined,
  now: Date,
): Promise<void> {
  await recordBody(tx, inboundId, { to: mail.to, text: mail.text, html: mail.html, raw: mail.invalid ? (raw ?? Buffer.from(mail.text ?? '')) : null });
  const cap = config().inboundAttachmentMaxBytes;
  const rows = mail.attachments.map((a, i) => ({
    id: newId(),
    inbound_message_id: inboundId,
    position: i + 1,
    filename: a.filename.slice(0, 500),
    content_type: a.contentType.slice(0, 200),
    size: a.content.length,
    content: a.content.length <= cap ? a.content : null,
  }));
  await insertAttachments(tx, rows);
  const { send_id, campaign_id } = await replyLinks(tx, links.relatedId, links.prospectId);
  const view = receivedView(
    {
      id: inboundId,
      mailbox_id: mailbox.id,
      kind: links.kind,
      from_address: mail.from,
      to_address: mail.to,
      subject: mail.subject.slice(0, 998),
      text: mail.text,
      html: mail.html,
      invalid: mail.invalid,
      related_id: links.relatedId,
      send_id,
      prospect_id: links.prospectId,
      campaign_id,
      received_at: now,
    },
    rows.map((r) => ({ ...r, stored: r.content !== null })),
    eventUrlExpiry(now),
  );
  await emitEvent(tx, mailbox.accountId, 'message.received', { ...view, received_at: now.toISOString() });
}

function receivedView(row: ReceivedRow, attachments: (AttachmentRow & { stored: boolean })[], expires: Date): ReceivedMessage {
  const inReplyTo: ReceivedMessage['in_reply_to'] = {};
  if (row.related_id) inReplyTo.message = row.related_id;
  if (row.send_id) inReplyTo.send = row.send_id;
  if (row.prospect_id !== null) inReplyTo.prospect = row.prospect_id;
  if (row.campaign_id !== null) inReplyTo.campaign = row.campaign_id;
  return {
    id: row.id,
    mailbox: row.mailbox_id,
    kind: row.kind,
    from: row.from_address,
    to: row.to_address,
    subject: row.subject,
    text: row.text,
    html: row.html,
    attachments: attachments.map((a) => ({ filename: a.filename, content_type: a.content_type, size: a.size, url: a.stored ? attachmentUrl(a.id, expires) : null })),
    in_reply_to: inReplyTo,
    invalid: row.invalid,
    received_at: row.received_at,
  };
}

export const MAX_RECEIVED_PAGE = 100;

/**
 * GET /api/v1/inbound?after= (docs/api.md), MCP list_inbound and the console: the account's received emails after the
 * id `after`, oldest first, with `next` (the last id, or null when the page was the last).
 */
export async function listReceived(db: Tx, accountId: number, query: { after?: number; limit?: number; mailbox?: number }): Promise<{ messages: ReceivedMessage[]; next: number | null }> {
  const limit = Math.min(query.limit ?? 50, MAX_RECEIVED_PAGE);
  const rows = await receivedAfter(db, accountId, query.after ?? 0, limit, query.mailbox ?? null);
  const files = rows.length ? await attachmentsOf(db, rows.map((r) => r.id)) : [];
  const expires = new Date(Date.now() + READ_URL_MS);
  const messages = rows.map((r) => receivedView(r, files.filter((f) => f.inbound_message_id === r.id), expires));
  return { messages, next: rows.length === limit ? rows[rows.length - 1]!.id : null };
}

/** One received email with its body, for the console (NotFound when there is none, or it was a report). */
export async function getReceived(db: Tx, id: number): Promise<ReceivedMessage | undefined> {
  const row = await receivedById(db, id);
  if (!row || !['reply', 'auto_reply', 'other'].includes(row.kind)) return undefined;
  const files = await attachmentsOf(db, [row.id]);
  return receivedView(row, files, new Date(Date.now() + READ_URL_MS));
}

/**
 * The html of an email made safe to show in the console's sandboxed iframe (no scripts run there anyway): scripts,
 * styles, frames, objects, forms, event handlers and javascript: URLs taken out, and a policy that loads nothing from
 * anywhere (no remote images: no tracking pixel fires when an operator reads a reply).
 */
export function sanitizedHtml(html: string): string {
  const cleaned = html
    .replace(/<(script|style|iframe|object|embed|noscript|template)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<\/?(script|style|iframe|object|embed|form|input|button|link|meta|base|frame|frameset|noscript|template)\b[^>]*>/gi, '')
    .replace(/\son[a-z]+\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/gi, '')
    .replace(/(href|src|action|xlink:href)\s*=\s*("\s*javascript:[^"]*"|'\s*javascript:[^']*'|javascript:[^\s>]+)/gi, '$1="#"');
  return `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:"><body>${cleaned}</body>`;
}
