import { rawQuery, type Db } from '../db';
import type { OutgoingEmail } from '../delivery/outbox';
import { messageRow } from '../delivery/outbox';
import { utcDay } from './quota';
import type { SendRequest } from './schema';

export interface AcceptedWrite {
  sendId: string;
  skipped: unknown[];
  recipients: string[];
  /** the answer stored for replay when the request carried an Idempotency-Key */
  answer: (messages: { id: string; to: string }[]) => unknown;
  idempotencyRecord?: number;
}

/**
 * Everything an accepted send writes, as ONE statement (so one round trip and one atomic commit): the key's usage for
 * today, counted only while it stays within the limit; the Send; one Message per recipient; the idempotent answer.
 * Each insert reads the one before it, so when the limit would be passed nothing at all is written and `used` is null.
 * One statement instead of an interactive transaction of six is what makes accepting cheap (bench/README.md); the
 * usage row, which every send of the key updates, is locked only for this statement and its commit.
 * The copies are written already marked enqueued (the caller queues them right after); if Redis refuses the jobs the
 * caller clears the mark, and a crash in between leaves a mark the reconciler treats as stale after five minutes.
 */
export async function writeAcceptedSend(
  db: Db,
  key: { id: number; accountId: number; dailyLimit: number },
  mailbox: { id: number; address: string },
  request: SendRequest & { fromName: string },
  write: AcceptedWrite,
): Promise<{ used: number | null; messages: { id: string; to: string }[] }> {
  const rows = write.recipients.map((to) =>
    messageRow({ accountId: key.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', sendId: write.sendId, to, subject: request.subject } as OutgoingEmail),
  );
  const messages = rows.map((r) => ({ id: r.id!, to: r.to }));
  const answer = write.idempotencyRecord === undefined ? null : JSON.stringify(write.answer(messages));
  const [result] = await rawQuery<{ used: number | null }>(
    db,
    `WITH usage AS (
      INSERT INTO key_daily_usage (api_key_id, day, count)
      SELECT $1, $2::date, $3 WHERE $3::int <= $4::int
      ON CONFLICT (api_key_id, day) DO UPDATE SET count = key_daily_usage.count + EXCLUDED.count
      WHERE key_daily_usage.count + EXCLUDED.count <= $4
      RETURNING count
    ), send AS (
      INSERT INTO sends (id, account_id, api_key_id, from_name, reply_to, subject, text, html, headers, attachments, metadata, skipped, send_at)
      SELECT $5::uuid, $6, $1, $7, $8, $9, $10, $11, $12::jsonb, $13::jsonb, $14::jsonb, $15::jsonb, $16::timestamptz FROM usage
      RETURNING id
    ), copies AS (
      INSERT INTO messages (id, account_id, mailbox_id, kind, send_id, "to", subject, message_id_header, not_before, enqueued_at)
      SELECT m.id, $6, $17, 'transactional', send.id, m.recipient, $9, m.header, $16::timestamptz, now()
      FROM send, unnest($18::uuid[], $19::text[], $20::text[]) AS m(id, recipient, header)
      RETURNING 1
    ), answered AS (
      UPDATE idempotency_records SET state = 'done', response_status = 202, response_body = $21::jsonb
      WHERE id = $22::int AND EXISTS (SELECT 1 FROM send)
      RETURNING 1
    )
    SELECT (SELECT count FROM usage) AS used, (SELECT count(*) FROM copies)::int AS written, (SELECT count(*) FROM answered)::int AS answered`,
    [
      key.id,
      utcDay().toISOString().slice(0, 10),
      rows.length,
      key.dailyLimit,
      write.sendId,
      key.accountId,
      request.fromName,
      request.replyTo ?? null,
      request.subject,
      request.text ?? null,
      request.html ?? null,
      JSON.stringify(request.headers ?? {}),
      JSON.stringify(request.attachments ?? []),
      JSON.stringify(request.metadata ?? {}),
      JSON.stringify(write.skipped),
      request.sendAt ?? null,
      mailbox.id,
      rows.map((r) => r.id),
      rows.map((r) => r.to),
      rows.map((r) => r.messageIdHeader),
      answer,
      write.idempotencyRecord ?? null,
    ],
  );
  return { used: result?.used ?? null, messages };
}
