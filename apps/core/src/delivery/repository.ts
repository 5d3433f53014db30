import type { MessageKind } from '../../../../generated/prisma/enums';
import { countMessagesSql } from '../analytics/repository';
import { rawQuery, type Db, type Tx } from '../db';
import { idSpan } from '../ids';
import { MESSAGE_EVENT_DATA, subscribed } from '../events/repository';

/**
 * The SQL of delivery: the worker's batched claim and "sent" mark (fast-claim.ts says why their statements look as
 * they do, `status::text` included), the full claim's row lock, the enqueued mark, lease renewal, and the counts of
 * GET /admin/api/delivery/status.
 */

/** The statement of claimUnguardedRows (below); exported for the test of its plan. */
export const CLAIM_UNGUARDED = `
WITH claimed AS (
  UPDATE messages SET status = 'sending', locked_until = now() + $2 * interval '1 millisecond', locked_by = $4, attempts = attempts + 1, updated_at = now()
  WHERE id = ANY($1::uuid[]) AND id BETWEEN $5::uuid AND $6::uuid AND kind::text <> ALL($3::text[])
    AND status::text IN ('queued', 'deferred')
    AND (not_before IS NULL OR not_before <= now())
    AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.account_id = messages.account_id AND s.email = messages."to")
  RETURNING *
)
SELECT c.id::text AS id, c.send_id::text AS send_id, c.mailbox_id, row_to_json(c) AS message,
       CASE WHEN row_number() OVER (PARTITION BY c.mailbox_id) = 1 THEN row_to_json(mb) END AS mailbox,
       CASE WHEN c.send_id IS NOT NULL AND row_number() OVER (PARTITION BY c.send_id) = 1 THEN row_to_json(s) END AS send
FROM claimed c JOIN mailboxes mb ON mb.id = c.mailbox_id LEFT JOIN sends s ON s.id = c.send_id
`;

/** A claimed row as CLAIM_UNGUARDED returns it: snake_case JSON, each mailbox and Send with the first of its rows only. */
export interface ClaimedJson {
  id: string;
  send_id: string | null;
  mailbox_id: number;
  message: Record<string, unknown>;
  mailbox: Record<string, unknown> | null;
  send: Record<string, unknown> | null;
}

/**
 * Updates to `sending` (held by `holder` for `leaseMs`) each of the messages that is `queued` or `deferred`, due, not
 * suppressed and of no `guarded` kind, and reads it with its mailbox and Send, in one statement. A `sending` row whose
 * lease ran out is never taken here: the full claim (deliver.ts) asks first whether its holder still lives.
 */
export async function claimUnguardedRows(db: Db, ids: string[], leaseMs: number, guarded: MessageKind[], holder: string): Promise<ClaimedJson[]> {
  return rawQuery<ClaimedJson>(
    db,
    CLAIM_UNGUARDED,
    [ids, leaseMs, guarded, holder, ...idSpan(ids)],
    'claim-unguarded',
    'once',
  );
}

/** The statement of markRowsSent (below); exported for the test of its plan. */
export const MARK_SENT = `
WITH marked AS (
  UPDATE messages m SET status = 'sent', sent_at = now(), smtp_response = v.response, last_error = NULL, locked_until = NULL, updated_at = now()
  FROM unnest($1::uuid[], $2::text[]) AS v(id, response)
  WHERE m.id = v.id AND m.status::text = 'sending'
  -- what the counters, the events and the pause watches read: not the bodies (a broadcast copy's html and text)
  RETURNING m.id, m.account_id, m.mailbox_id, m.prospect_id, m.broadcast_id, m.send_id, m.kind, m."to", m.subject, m.status,
            m.smtp_response, m.last_error, m.bounce
), counted AS (
  ${countMessagesSql('marked', ['sent', 'delivered'])}
), evented AS (
  INSERT INTO events (account_id, type, data)
  SELECT m.account_id, 'message.sent', ${MESSAGE_EVENT_DATA} FROM marked m LEFT JOIN sends s ON s.id = m.send_id
  WHERE ${subscribed('m.account_id', `'message.sent'`)}
)
SELECT w.campaign_id, w.broadcast_id FROM pause_watches w
WHERE EXISTS (SELECT 1 FROM marked m WHERE m.broadcast_id = w.broadcast_id)
   OR EXISTS (SELECT 1 FROM marked m JOIN prospects p ON p.id = m.prospect_id WHERE p.campaign_id = w.campaign_id)
`;

/** An auto-pause window (outreach/auto-pause.ts) one of whose emails just ended: a campaign's or a broadcast's. */
export interface WatchedWindow {
  campaign_id: number | null;
  broadcast_id: number | null;
}

/**
 * Updates the `sending` messages to `sent` with their SMTP answers, adds them to the `sent` and `delivered` counters and
 * inserts their wanted `message.sent` events, in one statement. Answers the watched auto-pause windows the rows belong
 * to (pause_watches, usually empty: then nothing).
 */
export async function markRowsSent(db: Db, sent: { id: string; response: string }[]): Promise<WatchedWindow[]> {
  return rawQuery<WatchedWindow>(
    db,
    MARK_SENT,
    [sent.map((s) => s.id), sent.map((s) => s.response)],
    'mark-sent',
    'once',
  );
}

/** How an attempt that did not deliver leaves its message: retried later, or ended without delivery. */
export type UndeliveredStatus = 'deferred' | 'failed' | 'bounced';

/**
 * Records an attempt that did not deliver, in one statement: the message's status, last error and SMTP answer (its
 * lease given up), and the attempt's row in message_attempts with the answer, or the error when no server answered,
 * up to 500 characters. (A delivered attempt has no row: its message row keeps it, and the "sent" mark stays one
 * statement.) The row's number is the message's `attempts`; a second worker that took the row over after a lost lease
 * may have recorded that number already, and then keeps its row.
 */
export async function markAttemptUndelivered(db: Tx, id: string, status: UndeliveredStatus, error: string, answer: string | null): Promise<void> {
  await rawQuery(
    db,
    `WITH attempted AS (
       UPDATE messages SET status = $2::"MessageStatus", last_error = $3, smtp_response = $4, locked_until = NULL, updated_at = now()
       WHERE id = $1::uuid
       RETURNING id, attempts, locked_by
     )
     INSERT INTO message_attempts (message_id, attempt, at, outcome, response, worker)
     SELECT id, attempts, now(), $2::"MessageStatus", left(coalesce($4, $3), 500), locked_by FROM attempted
     ON CONFLICT (message_id, attempt) DO NOTHING`,
    [id, status, error, answer],
    'mark-attempt-undelivered',
  );
}

/** Locks the messages row (FOR UPDATE, in the caller's transaction); false when there is none. */
export async function lockMessage(tx: Tx, messageId: string): Promise<boolean> {
  const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM messages WHERE id = ${messageId}::uuid FOR UPDATE`;
  return locked.length > 0;
}

/** Sets `enqueued_at` of the messages to now: their delivery jobs are in Redis. */
export async function markEnqueued(db: Tx, ids: string[]): Promise<void> {
  await rawQuery(db, 'UPDATE messages SET enqueued_at = now() WHERE id = ANY($1::uuid[]) AND id BETWEEN $2::uuid AND $3::uuid', [ids, ...idSpan(ids)]);
}

/**
 * Sets `enqueued_at` of the messages to `at`, skipping any row another statement has locked (a claim or a "sent" mark
 * under way: the row is being worked on, its mark does not matter). The reconciler's note that a row's job is still on
 * its way: never waiting for a row lock, it cannot deadlock with a mark taking the same rows in another order (it did
 * after a Postgres outage behind PgBouncer, as the lease renewal once did).
 */
export async function markStillEnqueued(db: Tx, ids: string[], at: Date): Promise<void> {
  await rawQuery(
    db,
    `UPDATE messages SET enqueued_at = $2
     WHERE id IN (SELECT id FROM messages WHERE id = ANY($1::uuid[]) AND id BETWEEN $3::uuid AND $4::uuid FOR UPDATE SKIP LOCKED)
       AND id BETWEEN $3::uuid AND $4::uuid`,
    [ids, at, ...idSpan(ids)],
  );
}

/** Clears the enqueued mark of rows whose jobs Redis did not take, so the reconciler queues them on its next run. */
export async function markNotEnqueued(db: Tx, ids: string[]): Promise<void> {
  await rawQuery(db, 'UPDATE messages SET enqueued_at = NULL WHERE id = ANY($1::uuid[]) AND id BETWEEN $2::uuid AND $3::uuid', [ids, ...idSpan(ids)]);
}

/**
 * Moves the lease of the messages still `sending` to `leaseMs` from now, in one statement (found by primary key). A row
 * another statement has locked (its "sent" mark, most likely) is skipped, renewed at the next beat if still held: the
 * renewal never waits for a row lock, so it can never deadlock with a mark taking the same rows in another order (it
 * did, under load through PgBouncer).
 */
export async function renewLeases(db: Tx, ids: string[], leaseMs: number): Promise<void> {
  await rawQuery(
    db,
    `UPDATE messages SET locked_until = now() + $2 * interval '1 millisecond'
     WHERE id IN (SELECT id FROM messages WHERE id = ANY($1::uuid[]) AND id BETWEEN $3::uuid AND $4::uuid AND status::text = 'sending' FOR UPDATE SKIP LOCKED)
       AND id BETWEEN $3::uuid AND $4::uuid`,
    [ids, leaseMs, ...idSpan(ids)],
    'renew-leases',
  );
}

/** The counts behind deliveryStatus, as one row. */
export interface DeliveryCounts {
  by_status: Record<string, number> | null;
  oldest: number | null;
  expired: number;
  not_enqueued: number;
}

/**
 * Reads messages per status, the age in seconds of the oldest due queued or deferred one, the `sending` ones whose
 * lease ran out and the queued or deferred ones not marked enqueued, in one statement.
 */
export async function deliveryCounts(db: Tx): Promise<DeliveryCounts | undefined> {
  const [counts] = await rawQuery<DeliveryCounts>(
    db,
    `SELECT
       (SELECT json_object_agg(status, n) FROM (SELECT status::text, count(*)::int AS n FROM messages GROUP BY status) s) AS by_status,
       (SELECT extract(epoch FROM now() - min(created_at))::float FROM messages
         WHERE status IN ('queued', 'deferred') AND (not_before IS NULL OR not_before <= now())) AS oldest,
       (SELECT count(*)::int FROM messages WHERE status = 'sending' AND locked_until < now()) AS expired,
       (SELECT count(*)::int FROM messages WHERE status IN ('queued', 'deferred') AND enqueued_at IS NULL) AS not_enqueued`,
  );
  return counts;
}
