import type { Tx } from '../db';

/**
 * The inbound reader's SQL, and nothing else writes it: the claim of an inbound email and its mailbox cursor, the
 * lookups of the message it answers, and the bounces recorded on messages. What it does to prospects goes through
 * outreach/repository.ts.
 */

export interface OurMessage {
  id: string;
  to: string;
  prospect_id: number | null;
}

/** Reads the latest message of the mailbox whose Message-ID header is one of these; null when none is. */
export async function messageByMessageIds(tx: Tx, mailboxId: number, messageIds: string[]): Promise<OurMessage | null> {
  const [row] = await tx.$queryRaw<OurMessage[]>`
    SELECT id, "to", prospect_id FROM messages
    WHERE mailbox_id = ${mailboxId} AND message_id_header = ANY(${messageIds}::text[])
    ORDER BY created_at DESC LIMIT 1`;
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
  const claimed = await tx.$queryRaw<{ id: number }[]>`
        INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind, from_address, subject, message_id, received_at)
        VALUES (${mail.mailboxId}, ${mail.uidValidity}, ${mail.uid}, 'other', ${mail.from}, ${mail.subject}, ${mail.messageId}, ${mail.receivedAt})
        ON CONFLICT (mailbox_id, uid_validity, uid) DO NOTHING RETURNING id`;
  return claimed[0]?.id;
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
