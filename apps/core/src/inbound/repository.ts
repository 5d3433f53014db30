import type { Tx } from '../db';

/**
 * The inbound reader's SQL, and nothing else writes it: the claim of an inbound email and its mailbox cursor, the
 * lookups of the message it answers, and the bounces recorded on messages. What it does to prospects goes through
 * outreach/repository/.
 */

export interface OurMessage {
  id: string;
  to: string;
  prospect_id: number | null;
}

/**
 * Reads the latest message of the mailbox whose Message-ID header is one of these, the copy to one of `recipients`
 * first (the copies of a message submitted over SMTP share its Message-ID); null when none is.
 */
export async function messageByMessageIds(tx: Tx, mailboxId: number, messageIds: string[], recipients: string[] = []): Promise<OurMessage | null> {
  const [row] = await tx.$queryRaw<OurMessage[]>`
    SELECT id, "to", prospect_id FROM messages
    WHERE mailbox_id = ${mailboxId} AND message_id_header = ANY(${messageIds}::text[])
    ORDER BY lower("to") = ANY(${recipients}::text[]) DESC, created_at DESC LIMIT 1`;
  return row ?? null;
}

/** Reads the mailbox's message of this id; null when it is not one of the mailbox's. */
export async function messageById(tx: Tx, mailboxId: number, id: string): Promise<OurMessage | null> {
  const [row] = await tx.$queryRaw<OurMessage[]>`SELECT id, "to", prospect_id FROM messages WHERE id = ${id}::uuid AND mailbox_id = ${mailboxId}`;
  return row ?? null;
}

/** The email's place in its mailbox and what it says of itself, as claimInbound records it. */
export interface InboundHeader {
  mailboxId: number;
  uidValidity: bigint;
  uid: bigint;
  from: string;
  subject: string;
  messageId: string | null;
  receivedAt: Date;
}

/**
 * Inserts the email's inbound_messages row (kind `other` until its effects are known), unique on (mailbox,
 * uidvalidity, uid): answers the new row's id, or undefined when another reader (or an earlier run) has it already.
 */
export async function claimInbound(tx: Tx, mail: InboundHeader): Promise<number | undefined> {
  // the (mailbox, uidvalidity, uid) claimed in inbound_uids with the row's id (inbound_messages is partitioned:
  // docs/partitions.md); the row is written only when the claim was this statement's
  const claimed = await tx.$queryRaw<{ id: bigint }[]>`
        WITH claim AS (
          INSERT INTO inbound_uids (mailbox_id, uid_validity, uid, inbound_message_id)
          VALUES (${mail.mailboxId}, ${mail.uidValidity}, ${mail.uid}, inbound_id())
          ON CONFLICT (mailbox_id, uid_validity, uid) DO NOTHING RETURNING inbound_message_id)
        INSERT INTO inbound_messages (id, mailbox_id, uid_validity, uid, kind, from_address, subject, message_id, received_at)
        SELECT inbound_message_id, ${mail.mailboxId}, ${mail.uidValidity}, ${mail.uid}, 'other', ${mail.from}, ${mail.subject}, ${mail.messageId}, ${mail.receivedAt} FROM claim
        RETURNING id`;
  return claimed[0] ? Number(claimed[0].id) : undefined;
}

/** Moves the mailbox's cursor (for this uidvalidity) up to `uid`, never back. */
export async function advanceCursor(tx: Tx, mailboxId: number, uidValidity: bigint, uid: bigint): Promise<void> {
  await tx.$executeRaw`
        UPDATE inbound_cursors SET last_uid = GREATEST(last_uid, ${uid}), updated_at = now()
        WHERE mailbox_id = ${mailboxId} AND uid_validity = ${uidValidity}`;
}

/** Writes the bounce (as JSON) onto the message. */
export async function recordBounce(tx: Tx, messageId: string, bounce: object): Promise<void> {
  await tx.$executeRaw`UPDATE messages SET bounce = ${JSON.stringify(bounce)}::jsonb, updated_at = now() WHERE id = ${messageId}::uuid`;
}

/**
 * Counts the account's different emails to `email` with a mailbox-class bounce in the last `days` days, none before the
 * address's latest reply to any of the account's mailboxes (a reply proves the mailbox works).
 */
export async function recentMailboxBounces(tx: Tx, accountId: number, email: string, days: number): Promise<number> {
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(DISTINCT m.id)::int AS n FROM messages m
    WHERE m.account_id = ${accountId} AND lower(m."to") = ${email}
      AND m.bounce->>'class' = 'mailbox'
      AND (m.bounce->>'at')::timestamptz > now() - make_interval(days => ${days}::int)
      AND (m.bounce->>'at')::timestamptz > COALESCE((
        SELECT max(i.received_at) FROM inbound_messages i JOIN mailboxes b ON b.id = i.mailbox_id
        WHERE b.account_id = ${accountId} AND i.kind = 'reply' AND i.from_address = ${email}), '-infinity'::timestamptz)`;
  return row?.n ?? 0;
}

// ---- inbound mail as events (received.ts) ----

/** Writes what the email said onto its inbound_messages row: the To address, text, html, and the raw bytes of invalid MIME. */
export async function recordBody(tx: Tx, id: number, body: { to: string; text: string | null; html: string | null; raw: Buffer | null }): Promise<void> {
  await tx.$executeRaw`UPDATE inbound_messages SET to_address = ${body.to}, text = ${body.text}, html = ${body.html}, raw = ${body.raw} WHERE id = ${id}::bigint`;
}

export interface AttachmentRow {
  id: string;
  inbound_message_id: number;
  position: number;
  filename: string;
  content_type: string;
  size: number;
}

/** Inserts the email's attachments in one statement; `content` null for one over the size cap (metadata only). */
export async function insertAttachments(tx: Tx, rows: (AttachmentRow & { content: Buffer | null })[]): Promise<void> {
  if (!rows.length) return;
  await tx.$executeRawUnsafe(
    `INSERT INTO inbound_attachments (id, inbound_message_id, position, filename, content_type, size, content)
     SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::int[], $7::bytea[])`,
    rows.map((r) => r.id),
    rows.map((r) => r.inbound_message_id),
    rows.map((r) => r.position),
    rows.map((r) => r.filename),
    rows.map((r) => r.content_type),
    rows.map((r) => r.size),
    rows.map((r) => r.content),
  );
}

/** What our message an email answers links to: its Send, and the prospect's campaign. */
export async function replyLinks(tx: Tx, messageId: string | null, prospectId: number | null): Promise<{ send_id: string | null; campaign_id: number | null }> {
  const [row] = await tx.$queryRaw<{ send_id: string | null; campaign_id: number | null }[]>`
    SELECT (SELECT send_id FROM messages WHERE id = ${messageId}::uuid) AS send_id,
           (SELECT campaign_id FROM prospects WHERE id = ${prospectId}::int) AS campaign_id`;
  return row ?? { send_id: null, campaign_id: null };
}

export interface ReceivedRow {
  id: number;
  mailbox_id: number;
  kind: string;
  from_address: string;
  to_address: string;
  subject: string;
  text: string | null;
  html: string | null;
  invalid: boolean;
  related_id: string | null;
  send_id: string | null;
  prospect_id: number | null;
  campaign_id: number | null;
  received_at: Date;
}

// an inbound id is a bigint below 2^53 (inbound_id(): docs/partitions.md), held exactly by a float8, which Prisma
// answers as a number where it answers a bigint as a BigInt
const RECEIVED_COLUMNS = `i.id::float8 AS id, i.mailbox_id, i.kind::text AS kind, i.from_address, i.to_address, i.subject, i.text, i.html, i.raw IS NOT NULL AS invalid,
  i.related_id, m.send_id, i.prospect_id, p.campaign_id, i.received_at`;

/** The account's emails handed on as message.received (replies and messages, not reports), after the id `after`, oldest first. */
export function receivedAfter(tx: Tx, accountId: number, after: number, limit: number, mailboxId: number | null = null): Promise<ReceivedRow[]> {
  return tx.$queryRawUnsafe<ReceivedRow[]>(
    `SELECT ${RECEIVED_COLUMNS} FROM inbound_messages i JOIN mailboxes b ON b.id = i.mailbox_id
       LEFT JOIN messages m ON m.id = i.related_id LEFT JOIN prospects p ON p.id = i.prospect_id
     WHERE b.account_id = $1 AND i.id > $2::bigint AND i.kind IN ('reply', 'auto_reply', 'other') AND ($4::int IS NULL OR i.mailbox_id = $4::int)
     ORDER BY i.id LIMIT $3`,
    accountId,
    after,
    limit,
    mailboxId,
  );
}

/** One handled email by id (any kind), with its links; undefined when there is none. */
export async function receivedById(tx: Tx, id: number): Promise<ReceivedRow | undefined> {
  const [row] = await tx.$queryRawUnsafe<ReceivedRow[]>(
    `SELECT ${RECEIVED_COLUMNS} FROM inbound_messages i LEFT JOIN messages m ON m.id = i.related_id LEFT JOIN prospects p ON p.id = i.prospect_id WHERE i.id = $1::bigint`,
    id,
  );
  return row;
}

/** The attachments (without content) of these emails, in order. */
export function attachmentsOf(tx: Tx, ids: number[]): Promise<(AttachmentRow & { stored: boolean })[]> {
  return tx.$queryRaw<(AttachmentRow & { stored: boolean })[]>`
    SELECT id, inbound_message_id::float8 AS inbound_message_id, position, filename, content_type, size, content IS NOT NULL AS stored
    FROM inbound_attachments WHERE inbound_message_id = ANY(${ids}::bigint[]) ORDER BY inbound_message_id, position`;
}

/** An attachment's content and type; undefined when it is gone (retention) or was kept as metadata only. */
export async function attachmentContent(tx: Tx, id: string): Promise<{ filename: string; content_type: string; content: Buffer } | undefined> {
  const [row] = await tx.$queryRaw<{ filename: string; content_type: string; content: Buffer }[]>`
    SELECT filename, content_type, content FROM inbound_attachments WHERE id = ${id}::uuid AND content IS NOT NULL`;
  return row;
}
