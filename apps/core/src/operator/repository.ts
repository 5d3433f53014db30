import { rawQuery, type Tx } from '../db';

/**
 * The SQL of the operator's read side (the console's message page and search, a campaign's prospects, the charts'
 * hourly and per-minute figures). Each statement reads through an index of its own (migration "operator"), so its cost
 * follows the rows it answers, not the year of rows behind them.
 */

export interface MessageSearchRow {
  id: string;
  account_id: number;
  kind: string;
  to: string;
  subject: string;
  status: string;
  attempts: number;
  last_error: string | null;
  smtp_response: string | null;
  message_id_header: string;
  bounce: unknown;
  created_at: Date;
  sent_at: Date | null;
}

/** What a search looks for; every part optional, all of them together (AND). */
export interface MessageSearchSql {
  id?: string;
  messageId?: string;
  recipient?: string;
  domain?: string;
  words?: string;
  status?: string;
  /** one account, or several (a person's own: docs/teams.md) */
  account?: number | readonly number[];
  from?: Date;
  to?: Date;
  /** the keyset: rows strictly older than this (created_at, id) */
  before?: { at: Date; id: string };
  limit: number;
}

/**
 * Messages newest first, by (created_at, id). Each way in has its index: the primary key (id), the Message-ID's unique
 * index, (to, created_at), the recipient-domain expression index, the subject words' GIN index, (status, created_at)
 * and (created_at). The expressions below are written exactly as the indexes are, or Postgres would not use them.
 */
export async function searchMessageRows(db: Tx, s: MessageSearchSql): Promise<MessageSearchRow[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  if (s.id) where.push(`m.id = ${param(s.id)}::uuid`);
  if (s.messageId) where.push(`m.message_id_header = ${param(s.messageId)}`);
  if (s.recipient) where.push(`m."to" = ${param(s.recipient)}`);
  if (s.domain) where.push(`split_part(m."to", '@', 2) = ${param(s.domain)} AND m."to" LIKE '%@%'`);
  if (s.words) where.push(`to_tsvector('simple', m.subject) @@ plainto_tsquery('simple', ${param(s.words)}) AND m.subject <> ''`);
  if (s.status) where.push(`m.status = ${param(s.status)}::"MessageStatus"`);
  if (typeof s.account === 'number') where.push(`m.account_id = ${param(s.account)}`);
  else if (s.account) where.push(`m.account_id = ANY(${param([...s.account])}::int[])`);
  if (s.from) where.push(`m.created_at >= ${param(s.from)}`);
  if (s.to) where.push(`m.created_at < ${param(s.to)}`);
  if (s.before) {
    const at = param(s.before.at);
    where.push(`m.created_at <= ${at} AND (m.created_at < ${at} OR m.id < ${param(s.before.id)}::uuid)`);
  }
  return rawQuery<MessageSearchRow>(
    db,
    `SELECT m.id, m.account_id, m.kind::text AS kind, m."to", m.subject, m.status::text AS status, m.attempts, m.last_error,
            m.smtp_response, m.message_id_header, m.bounce, m.created_at, m.sent_at
     FROM messages m
     ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY m.created_at DESC, m.id DESC
     LIMIT ${param(s.limit)}`,
    values,
  );
}

export interface MessageEventRow {
  id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  dispatched_at: Date | null;
}

/** The events written about a message (its `data.id`), oldest first, through the partial index on message events. */
export async function messageEventRows(db: Tx, messageId: string): Promise<MessageEventRow[]> {
  return rawQuery<MessageEventRow>(
    db,
    `SELECT e.id, e.type, e.data, e.created_at, e.dispatched_at FROM events e
     WHERE (e.data->>'id') = $1 AND e.type LIKE 'message.%'
     ORDER BY e.created_at, e.id LIMIT 200`,
    [messageId],
  );
}

export interface WebhookDeliveryRow {
  event_id: string;
  webhook_id: number;
  url: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  at: Date;
}

/** The webhook deliveries of these events, oldest first. */
export async function webhookDeliveryRows(db: Tx, eventIds: string[]): Promise<WebhookDeliveryRow[]> {
  if (!eventIds.length) return [];
  return rawQuery<WebhookDeliveryRow>(
    db,
    `SELECT d.event_id, d.webhook_id, w.url, d.attempt, d.status_code, d.error, d.at
     FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.event_id = ANY($1::uuid[]) ORDER BY d.at, d.id LIMIT 500`,
    [eventIds],
  );
}

export interface ProspectRow {
  id: number;
  email: string | null;
  site: string | null;
  name: string;
  status: string;
  reason: string;
  step: number;
  stage: number;
  next_at: Date | null;
  replied_at: Date | null;
  reply: string;
  updated_at: Date;
  verification_result: string | null;
  verification_checked_at: Date | null;
}

/** A campaign's prospects, newest first by id, all or of one status (and step): (campaign_id[, status], id) indexes. */
export async function prospectRows(db: Tx, q: { campaign: number; status?: string; step?: number; beforeId?: number; limit: number }): Promise<ProspectRow[]> {
  const values: unknown[] = [q.campaign];
  const where = ['p.campaign_id = $1'];
  if (q.status) where.push(`p.status = $${values.push(q.status)}::"ProspectStatus"`);
  if (q.step !== undefined) where.push(`p.step = $${values.push(q.step)}`);
  if (q.beforeId) where.push(`p.id < $${values.push(q.beforeId)}`);
  return rawQuery<ProspectRow>(
    db,
    `SELECT p.id, p.email, p.site, p.name, p.status::text AS status, p.reason, p.step, p.stage, p.next_at, p.replied_at,
            left(p.reply, 300) AS reply, p.updated_at, p.verification_result::text AS verification_result, p.verification_checked_at
     FROM prospects p WHERE ${where.join(' AND ')}
     ORDER BY p.id DESC LIMIT $${values.push(q.limit)}`,
    values,
  );
}

/** Which of the charts' filters the hourly figures read. */
export interface BucketFilter {
  account?: number;
  mailbox?: number;
  campaign?: number;
  broadcast?: number;
}

export interface HourRow {
  hour: Date;
  accepted: number;
  delivered: number;
  bounced_dead: number;
  bounced_other: number;
  failed: number;
  opened: number;
  clicked: number;
}

const FILTER_SQL = `($3::int IS NULL OR m.account_id = $3) AND ($4::int IS NULL OR m.mailbox_id = $4)
  AND ($5::int IS NULL OR m.prospect_id IN (SELECT id FROM prospects WHERE campaign_id = $5)) AND ($6::int IS NULL OR m.broadcast_id = $6)`;

/**
 * Emails accepted in each hour of [from, to) and what became of them so far (delivered, bounced, failed, opened,
 * clicked), every hour present: read from messages through (created_at), for ranges of a few days.
 */
/** Whether any daily counter is of a day before `day` (stops at the first such row: old rows come first in the heap). */
export async function countedBefore(db: Tx, day: Date): Promise<boolean> {
  const [row] = await rawQuery<{ old: boolean }>(db, `SELECT EXISTS (SELECT 1 FROM daily_counts WHERE day < $1::date) AS old`, [day.toISOString().slice(0, 10)]);
  return row?.old ?? false;
}

export async function hourRows(db: Tx, from: Date, to: Date, f: BucketFilter): Promise<HourRow[]> {
  return rawQuery<HourRow>(
    db,
    `WITH m AS (
       SELECT m.id, date_trunc('hour', m.created_at) AS hour, m.status, (m.bounce->>'dead')::boolean AS dead
       FROM messages m WHERE m.created_at >= $1 AND m.created_at < $2 AND ${FILTER_SQL}
     ), counts AS (
       SELECT hour, count(*)::int AS accepted,
              count(*) FILTER (WHERE status = 'sent')::int AS delivered,
              count(*) FILTER (WHERE status = 'bounced' AND dead IS TRUE)::int AS bounced_dead,
              count(*) FILTER (WHERE status = 'bounced' AND dead IS NOT TRUE)::int AS bounced_other,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM message_opens o WHERE o.message_id = m.id))::int AS opened,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM link_clicks c WHERE c.message_id = m.id AND NOT c.scanner))::int AS clicked
       FROM m GROUP BY hour
     )
     SELECT h.hour, COALESCE(c.accepted, 0) AS accepted, COALESCE(c.delivered, 0) AS delivered,
            COALESCE(c.bounced_dead, 0) AS bounced_dead, COALESCE(c.bounced_other, 0) AS bounced_other,
            COALESCE(c.failed, 0) AS failed, COALESCE(c.opened, 0) AS opened, COALESCE(c.clicked, 0) AS clicked
     FROM generate_series(date_trunc('hour', $1::timestamptz), $2::timestamptz - interval '1 second', interval '1 hour') AS h(hour)
     LEFT JOIN counts c ON c.hour = h.hour ORDER BY h.hour`,
    [from, to, f.account ?? null, f.mailbox ?? null, f.campaign ?? null, f.broadcast ?? null],
  );
}

export interface MinuteRow {
  minute: Date;
  delivered: number;
  bounced: number;
  failed: number;
  opened: number;
}

/**
 * A broadcast's last `minutes` minutes, minute by minute: copies delivered, bounced and failed (by the time their row
 * last changed, through the partial (broadcast_id, updated_at) index) and first opens (message_opens.first_at).
 */
export async function broadcastMinuteRows(db: Tx, broadcast: number, minutes: number): Promise<MinuteRow[]> {
  return rawQuery<MinuteRow>(
    db,
    `WITH span AS (SELECT date_trunc('minute', now()) - make_interval(mins => $2::int - 1) AS start),
     ended AS (
       SELECT date_trunc('minute', m.updated_at) AS minute,
              count(*) FILTER (WHERE m.status = 'sent')::int AS delivered,
              count(*) FILTER (WHERE m.status = 'bounced')::int AS bounced,
              count(*) FILTER (WHERE m.status = 'failed')::int AS failed
       FROM messages m, span WHERE m.broadcast_id = $1 AND m.updated_at >= span.start GROUP BY 1
     ),
     opens AS (
       SELECT date_trunc('minute', o.first_at) AS minute, count(*)::int AS opened
       FROM message_opens o JOIN messages m ON m.id = o.message_id, span
       WHERE o.first_at >= span.start AND m.broadcast_id = $1 GROUP BY 1
     )
     SELECT g.minute, COALESCE(e.delivered, 0) AS delivered, COALESCE(e.bounced, 0) AS bounced, COALESCE(e.failed, 0) AS failed,
            COALESCE(o.opened, 0) AS opened
     FROM span, generate_series(span.start, date_trunc('minute', now()), interval '1 minute') AS g(minute)
     LEFT JOIN ended e ON e.minute = g.minute LEFT JOIN opens o ON o.minute = g.minute ORDER BY g.minute`,
    [broadcast, minutes],
  );
}

/** Copies of a broadcast delivered in the last `seconds` seconds (the partial (broadcast_id, updated_at) index). */
export async function broadcastDeliveredSince(db: Tx, broadcast: number, seconds: number): Promise<number> {
  const [row] = await rawQuery<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM messages WHERE broadcast_id = $1 AND updated_at >= now() - make_interval(secs => $2::int) AND status = 'sent'`,
    [broadcast, seconds],
  );
  return row?.n ?? 0;
}
