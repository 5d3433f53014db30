import { rawQuery, type Db } from '../db';
import { messageRow } from '../delivery/outbox';
import { utcDay } from './quota';
import type { SendRequest } from './schema';

/** Why a recipient is left out of a send: the account's suppression list (bounced, complained) or its stop list. */
export type SkipReason = 'bounced' | 'complained' | 'stopped';

export interface AcceptedWrite {
  /** what was written: nothing when `kept` is empty (nobody to write to) or `used` is null (over the daily limit) */
  used: number | null;
  kept: { id: string; to: string }[];
  skipped: { to: string; reason: SkipReason }[];
}

/**
 * Everything an accepted send does to Postgres, as ONE statement, so one round trip and one atomic commit:
 * 1. each recipient is checked against the account's suppression list (bounced, complained) and stop list (the address,
 *    or its domain or a parent domain: the rule of outreach/contacts.ts loadStopList, in SQL): those go to `skipped`,
 *    in request order;
 * 2. the kept copies are counted against the key's usage for today, only while they stay within the limit;
 * 3. the Send, one Message per kept recipient, and the answer an Idempotency-Key will replay.
 * Each step reads the one before it, so with nobody kept or over the limit nothing at all is written. One statement
 * instead of a transaction of seven is what makes accepting cheap (bench/README.md); the usage row, which every send of
 * the key updates, is locked only for this statement and its commit. The copies are written already marked enqueued
 * (the caller queues them right after); if Redis refuses the jobs the caller clears the mark, and a crash in between
 * leaves a mark the reconciler treats as stale after five minutes.
 */
export async function writeAcceptedSend(
  db: Db,
  key: { id: number; accountId: number; dailyLimit: number },
  mailbox: { id: number; address: string },
  request: SendRequest & { fromName: string },
  sendId: string,
  idempotencyRecord: number | undefined,
): Promise<AcceptedWrite> {
  const rows = request.to.map((to) =>
    messageRow({ accountId: key.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', sendId, to, subject: request.subject }),
  );
  const [result] = await rawQuery<{ used: number | null; skipped: { to: string; reason: SkipReason }[] }>(
    db,
    `WITH input AS (
      SELECT m.id, m.recipient, m.header, m.ord, split_part(m.recipient, '@', 2) AS domain
      FROM unnest($16::uuid[], $17::text[], $18::text[]) WITH ORDINALITY AS m(id, recipient, header, ord)
    ), verdict AS (
      SELECT i.*, COALESCE(
        (SELECT s.reason::text FROM suppressions s WHERE s.account_id = $5 AND s.email = i.recipient),
        (SELECT 'stopped' FROM stop_list st WHERE st.account_id = $5 AND (
           (st.kind = 'email' AND st.value = i.recipient)
           OR (st.kind = 'domain' AND (i.domain = st.value OR right(i.domain, length(st.value) + 1) = '.' || st.value)))
         LIMIT 1)) AS reason
      FROM input i
    ), kept AS (
      SELECT * FROM verdict WHERE reason IS NULL
    ), skipped AS (
      SELECT coalesce(json_agg(json_build_object('to', recipient, 'reason', reason) ORDER BY ord), '[]'::json) AS list
      FROM verdict WHERE reason IS NOT NULL
    ), usage AS (
      INSERT INTO key_daily_usage (api_key_id, day, count)
      SELECT $1, $2::date, k.n FROM (SELECT count(*)::int AS n FROM kept) k WHERE k.n > 0 AND k.n <= $3
      ON CONFLICT (api_key_id, day) DO UPDATE SET count = key_daily_usage.count + EXCLUDED.count
      WHERE key_daily_usage.count + EXCLUDED.count <= $3
      RETURNING count
    ), send AS (
      INSERT INTO sends (id, account_id, api_key_id, from_name, reply_to, subject, text, html, headers, attachments, metadata, skipped, send_at)
      SELECT $4::uuid, $5, $1, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, $13::jsonb, (SELECT list FROM skipped)::jsonb, $14::timestamptz
      FROM usage
      RETURNING id
    ), copies AS (
      INSERT INTO messages (id, account_id, mailbox_id, kind, send_id, "to", subject, message_id_header, not_before, enqueued_at)
      SELECT k.id, $5, $15, 'transactional', send.id, k.recipient, $8, k.header, $14::timestamptz, now()
      FROM send, kept k
      RETURNING 1
    ), answered AS (
      UPDATE idempotency_records SET state = 'done', response_status = 202, response_body = json_build_object(
        'ok', true, 'id', $4::text, 'status', 'queued',
        'messages', (SELECT coalesce(json_agg(json_build_object('id', k.id::text, 'to', k.recipient, 'status', 'queued') ORDER BY k.ord), '[]'::json) FROM kept k),
        'skipped', (SELECT list FROM skipped))::jsonb
      WHERE id = $19::int AND EXISTS (SELECT 1 FROM send)
      RETURNING 1
    )
    SELECT (SELECT count FROM usage) AS used, (SELECT list FROM skipped) AS skipped,
           (SELECT count(*)::int FROM copies) AS written, (SELECT count(*)::int FROM answered) AS answered`,
    [
      key.id,
      utcDay().toISOString().slice(0, 10),
      key.dailyLimit,
      sendId,
      key.accountId,
      request.fromName,
      request.replyTo ?? null,
      request.subject,
      request.text ?? null,
      request.html ?? null,
      JSON.stringify(request.headers ?? {}),
      JSON.stringify(request.attachments ?? []),
      JSON.stringify(request.metadata ?? {}),
      request.sendAt ?? null,
      mailbox.id,
      rows.map((r) => r.id),
      rows.map((r) => r.to),
      rows.map((r) => r.messageIdHeader),
      idempotencyRecord ?? null,
    ],
  );
  const skipped = result?.skipped ?? [];
  const skippedSet = new Set(skipped.map((s) => s.to));
  const kept = rows.filter((r) => !skippedSet.has(r.to)).map((r) => ({ id: r.id!, to: r.to }));
  return { used: result?.used ?? null, kept, skipped };
}
