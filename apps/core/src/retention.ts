import { config } from './config';
import { rawQuery, type Db } from './db';
import { logger } from './logger';

/** Rows a statement clears at most: a big backlog is cleared over several statements, none holding many locks long. */
const BATCH = 1_000;
/** One run clears at most this many batches of each table; the next run (hourly) goes on. */
const MAX_BATCHES = 100;

/** Final states: nothing will read the content of such an email again to send it. */
const FINAL = `('sent', 'failed', 'bounced', 'cancelled')`;

/**
 * The retention task (RETENTION_DAYS, default 30; 0 keeps everything): emails finished that long ago lose their content
 * (text, html, attachments) and keep their row: who, when, status, the SMTP answer, the Message-ID. A Send's content
 * (shared by its copies) goes once every copy is finished and old enough; a confirmation, sequence or broadcast email's
 * own content with its row. Batched and idempotent: cleared rows no longer match.
 */
export async function dropOldContent(db: Db, now = new Date()): Promise<{ messages: number; sends: number }> {
  const days = config().retentionDays;
  if (days <= 0) return { messages: 0, sends: 0 };
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  let messages = 0;
  let sends = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await rawQuery<{ id: string }>(
      db,
      `UPDATE messages SET text = NULL, html = NULL, updated_at = now()
       WHERE id IN (SELECT id FROM messages WHERE status IN ${FINAL} AND updated_at < $1 AND (text IS NOT NULL OR html IS NOT NULL) LIMIT ${BATCH})
       RETURNING id`,
      [cutoff],
    );
    messages += rows.length;
    if (rows.length < BATCH) break;
  }
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await rawQuery<{ id: string }>(
      db,
      `UPDATE sends s SET text = NULL, html = NULL, attachments = '[]'
       WHERE s.id IN (
         SELECT s2.id FROM sends s2
         WHERE s2.created_at < $1 AND (s2.text IS NOT NULL OR s2.html IS NOT NULL OR s2.attachments <> '[]'::jsonb)
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.send_id = s2.id AND (m.status NOT IN ${FINAL} OR m.updated_at >= $1))
         LIMIT ${BATCH})
       RETURNING s.id`,
      [cutoff],
    );
    sends += rows.length;
    if (rows.length < BATCH) break;
  }
  if (messages || sends) logger.info({ messages, sends, days }, 'retention: content of old emails dropped');
  return { messages, sends };
}

/**
 * The tables that grow with use besides emails' content, each with its rule (docs/operator.md, "Retention"). Old rows
 * go, in batches; nothing a pending piece of work still needs: an event not yet fanned out, the audience of a
 * broadcast still sending, today's quota counts.
 */
/** The longest range GET /admin/api/stats answers (docs/analytics.md): daily counts are kept this long past RETENTION_DAYS. */
const STATS_DAYS = 400;

const RECORD_RULES: { table: string; name: string; old: string }[] = [
  // the outbox, once fanned out (webhook retries end within 3 days: failing endpoints are disabled then)
  { table: 'events', name: 'events', old: 'dispatched_at IS NOT NULL AND created_at < $1' },
  { table: 'webhook_deliveries', name: 'webhookDeliveries', old: 'at < $1' },
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
  { table: 'link_clicks', name: 'linkClicks', old: 'at < $1' },
  { table: 'message_opens', name: 'messageOpens', old: 'last_at < $1' },
  // the daily counts behind GET /admin/api/stats and the charts: the 400 days a query may span, past the retention
  { table: 'daily_counts', name: 'dailyCounts', old: `day < $1::date - ${STATS_DAYS}` },
];

export type DroppedRecords = Record<(typeof RECORD_RULES)[number]['name'] | 'messages' | 'sends', number>;

/**
 * RETENTION_DAYS (0 keeps everything) for the records of RECORD_RULES, and MESSAGE_ROWS_DAYS (0, the default, keeps
 * them) for the rows of finished emails and their Sends themselves. Batched by physical row (ctid), so one statement
 * shape serves every table, keys of one column or several.
 */
export async function dropOldRecords(db: Db, now = new Date()): Promise<DroppedRecords> {
  const { retentionDays, messageRowsDays } = config();
  const dropped = { messages: 0, sends: 0 } as DroppedRecords;
  for (const rule of RECORD_RULES) dropped[rule.name as keyof DroppedRecords] = 0;
  if (retentionDays > 0) {
    const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
    for (const rule of RECORD_RULES) dropped[rule.name as keyof DroppedRecords] = await deleteInBatches(db, rule.table, rule.old, cutoff);
  }
  if (messageRowsDays > 0) {
    const cutoff = new Date(now.getTime() - messageRowsDays * 86_400_000);
    dropped.messages = await deleteInBatches(db, 'messages', `status IN ${FINAL} AND updated_at < $1`, cutoff);
    dropped.sends = await deleteInBatches(db, 'sends', `created_at < $1 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.send_id = sends.id)`, cutoff);
  }
  const total = Object.values(dropped).reduce((a, b) => a + b, 0);
  if (total) logger.info({ ...dropped, retentionDays, messageRowsDays }, 'retention: old records dropped');
  return dropped;
}

async function deleteInBatches(db: Db, table: string, old: string, cutoff: Date): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await rawQuery<{ n: number }>(
      db,
      `WITH gone AS (DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE ${old} LIMIT ${BATCH}) RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [cutoff],
    );
    const n = rows[0]?.n ?? 0;
    deleted += n;
    if (n < BATCH) break;
  }
  return deleted;
}
