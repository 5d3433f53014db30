import { rawQuery, type Db } from '../db';
import { FINAL_STATUSES_SQL } from '../message-status';

/** The SQL of retention: which rows are old, and the batched statements that clear or delete them. */

/** Rows a statement clears at most: a big backlog is cleared over several statements, none holding many locks long. */
export const BATCH = 1_000;

/** Final states (message-status.ts): nothing will read the content of such an email again to send it. */
const FINAL = FINAL_STATUSES_SQL;

/** A table with the SQL condition that marks its rows old (`$1`: the cutoff). */
export interface OldRows {
  table: string;
  old: string;
  /** the columns that name a row, for a partitioned table (a ctid names a row only within one partition) */
  key?: string;
}

/** The longest range GET /admin/api/stats answers (docs/analytics.md): daily counts are kept this long past RETENTION_DAYS. */
const STATS_DAYS = 400;

/**
 * The tables that grow with use besides emails' content, each with its rule (docs/operator.md, "Retention"). Old rows
 * go, in batches; nothing a pending piece of work still needs: an event not yet fanned out, the audience of a
 * broadcast still sending, today's quota counts.
 */
export const RECORD_RULES: (OldRows & { name: string })[] = [
  // the outbox, once fanned out (webhook retries end within 3 days: failing endpoints are disabled then)
  { table: 'events', name: 'events', old: 'dispatched_at IS NOT NULL AND created_at < $1', key: 'id' },
  { table: 'webhook_deliveries', name: 'webhookDeliveries', old: 'at < $1' },
  // the answers of an email's attempts that did not deliver; its row keeps the last (and they go with it: ON DELETE CASCADE)
  { table: 'message_attempts', name: 'messageAttempts', old: 'at < $1', key: 'message_id, attempt' },
  { table: 'inbound_messages', name: 'inboundMessages', old: 'received_at < $1' },
  // the audience snapshot of a broadcast that ended; the broadcast keeps its counts and its copies their rows
  {
    table: 'broadcast_recipients',
    name: 'broadcastRecipients',
    old: `broadcast_id IN (SELECT id FROM broadcasts WHERE status IN ('sent', 'cancelled') AND updated_at < $1)`,
  },
  { table: 'confirmation_tokens', name: 'confirmationTokens', old: 'expires_at < $1' },
  { table: 'key_daily_usage', name: 'keyDailyUsage', old: 'day < $1::date' },
  // opt-in tracking (docs/analytics.md): each click, and each email's opens; the daily counts keep their totals
  { table: 'link_clicks', name: 'linkClicks', old: 'at < $1', key: 'message_id, id' },
  { table: 'message_opens', name: 'messageOpens', old: 'last_at < $1', key: 'message_id' },
  // the MX's messages (docs/mx.md), but a held one, which waits for a person to release or drop it
  { table: 'mx_messages', name: 'mxMessages', old: `status <> 'held' AND received_at < $1`, key: 'id' },
  // the daily counts behind GET /admin/api/stats and the charts: the 400 days a query may span, past the retention
  { table: 'daily_counts', name: 'dailyCounts', old: `day < $1::date - ${STATS_DAYS}` },
];

/** The rows of emails finished before the cutoff (MESSAGE_ROWS_DAYS). */
export const OLD_MESSAGES: OldRows = { table: 'messages', old: `status IN ${FINAL} AND updated_at < $1`, key: 'id' };
/** Sends older than the cutoff none of whose copies is left (delete after OLD_MESSAGES). */
export const OLD_SENDS: OldRows = { table: 'sends', old: `created_at < $1 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.send_id = sends.id)` };

/** Clears text and html of up to BATCH emails finished before the cutoff that still have them; returns their ids. */
export async function clearMessageContent(db: Db, cutoff: Date): Promise<{ id: string }[]> {
  return rawQuery<{ id: string }>(
    db,
    `UPDATE messages SET text = NULL, html = NULL, updated_at = now()
       WHERE id IN (SELECT id FROM messages WHERE status IN ${FINAL} AND updated_at < $1 AND (text IS NOT NULL OR html IS NOT NULL) LIMIT ${BATCH})
       RETURNING id`,
    [cutoff],
  );
}

/**
 * Clears text, html, attachments and submitted MIME of up to BATCH Sends made before the cutoff every copy of which finished before
 * it; returns their ids.
 */
export async function clearSendContent(db: Db, cutoff: Date): Promise<{ id: string }[]> {
  return rawQuery<{ id: string }>(
    db,
    `UPDATE sends s SET text = NULL, html = NULL, attachments = '[]', raw = NULL
       WHERE s.id IN (
         SELECT s2.id FROM sends s2
         WHERE s2.created_at < $1 AND (s2.text IS NOT NULL OR s2.html IS NOT NULL OR s2.attachments <> '[]'::jsonb OR s2.raw IS NOT NULL)
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.send_id = s2.id AND (m.status NOT IN ${FINAL} OR m.updated_at >= $1))
         LIMIT ${BATCH})
       RETURNING s.id`,
    [cutoff],
  );
}

/**
 * Deletes up to BATCH old rows of the table, by physical row (ctid), so one statement shape serves every table, keys
 * of one column or several (a partitioned table by its key: the same ctid is a row in each partition); returns how many.
 */
export async function deleteOldBatch(db: Db, rows: OldRows, cutoff: Date): Promise<number> {
  const { table, old } = rows;
  const key = rows.key ?? 'ctid';
  const deleted = await rawQuery<{ n: number }>(
    db,
    `WITH gone AS (DELETE FROM ${table} WHERE (${key}) IN (SELECT ${key} FROM ${table} WHERE ${old} LIMIT ${BATCH}) RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
    [cutoff],
  );
  return deleted[0]?.n ?? 0;
}
