import { rawQuery, type Tx } from '../db';
import { subscribed } from '../events/repository';
import type { CounterColumn } from './bounces';

/**
 * The SQL of analytics: the daily counters (`daily_counts`), the tracked clicks (`link_clicks`) and opens
 * (`message_opens`). Counting happens in the statement of the change it counts, so most functions here take the
 * caller's transaction, and countMessagesSql gives the counting CTE to statements of other domains.
 */

/** The counters of daily_counts, in the order GET /admin/api/stats answers them. */
export const COUNTERS = ['sent', 'delivered', 'bounced_dead', 'bounced_other', 'complained', 'unsubscribed', 'replied', 'clicked', 'opened'] as const;

export type CounterTotals = Record<(typeof COUNTERS)[number], number>;
export type DayCounts = { date: string } & CounterTotals;

const KNOWN = new Set<string>(COUNTERS);

function checked(column: CounterColumn): CounterColumn {
  // the column is spliced into SQL: only the fixed names may be
  if (!KNOWN.has(column)) throw new Error(`unknown counter ${column}`);
  return column;
}

/** The UTC day of "now", as SQL: every counter counts on the day its change is committed. */
const TODAY = `(now() AT TIME ZONE 'UTC')::date`;

/**
 * SQL: a data-modifying statement (usable as a CTE of the statement that makes the change) adding one to each of
 * `columns` for each row of `messages`, a relation of messages rows (e.g. the RETURNING of an UPDATE), filtered by
 * `where` (an SQL condition over `m`). A sequence email counts for its prospect's campaign, a broadcast copy for its
 * broadcast. The rows are grouped and taken in key order, so two statements cannot deadlock on the counters and one
 * statement never touches a counter row twice.
 */
export function countMessagesSql(messages: string, columns: CounterColumn | CounterColumn[], where = 'true'): string {
  const cols = (Array.isArray(columns) ? columns : [columns]).map(checked);
  return `INSERT INTO daily_counts (account_id, mailbox_id, campaign_id, broadcast_id, day, ${cols.join(', ')})
  SELECT m.account_id, m.mailbox_id,
         CASE WHEN m.prospect_id IS NULL THEN 0 ELSE COALESCE((SELECT p.campaign_id FROM prospects p WHERE p.id = m.prospect_id), 0) END,
         COALESCE(m.broadcast_id, 0), ${TODAY}, ${cols.map(() => 'count(*)::int').join(', ')}
  FROM ${messages} m
  WHERE ${where}
  GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (account_id, mailbox_id, campaign_id, broadcast_id, day) DO UPDATE SET ${cols.map((c) => `${c} = daily_counts.${c} + EXCLUDED.${c}`).join(', ')}`;
}

/** Adds one to each of `columns` for a message (by id), in the transaction of its change. */
export async function countMessage(tx: Tx, messageId: string, columns: CounterColumn | CounterColumn[]): Promise<void> {
  await rawQuery(tx, countMessagesSql('messages', columns, 'm.id = $1::uuid'), [messageId]);
}

export interface CounterKey {
  accountId: number;
  mailboxId: number;
  campaignId?: number | null;
  broadcastId?: number | null;
}

/**
 * One unsubscribe from a list, counted for the list's mailbox and for the latest broadcast of the list the person got
 * a copy of (0 when none): the broadcast's funnel shows who left after it. The list's broadcasts are walked newest
 * first through the (broadcast, subscriber) unique index of messages, so the cost follows the broadcasts, not the mail.
 */
export async function countUnsubscribe(tx: Tx, list: { id: number; accountId: number; mailboxId: number }, subscriberId: number): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO daily_counts (account_id, mailbox_id, campaign_id, broadcast_id, day, unsubscribed)
     SELECT $1, $2, 0, COALESCE((SELECT b.id FROM broadcasts b JOIN messages m ON m.broadcast_id = b.id AND m.subscriber_id = $4
                                 WHERE b.list_id = $3 ORDER BY b.id DESC LIMIT 1), 0), ${TODAY}, 1
     ON CONFLICT (account_id, mailbox_id, campaign_id, broadcast_id, day) DO UPDATE SET unsubscribed = daily_counts.unsubscribed + 1`,
    [list.accountId, list.mailboxId, list.id, subscriberId],
  );
}

/** A prospect's move to replied, counted for its campaign (and the campaign's mailbox). */
export async function countReply(tx: Tx, campaignId: number): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO daily_counts (account_id, mailbox_id, campaign_id, broadcast_id, day, replied)
     SELECT c.account_id, c.mailbox_id, c.id, 0, ${TODAY}, 1 FROM campaigns c WHERE c.id = $1
     ON CONFLICT (account_id, mailbox_id, campaign_id, broadcast_id, day) DO UPDATE SET replied = daily_counts.replied + 1`,
    [campaignId],
  );
}

/** The filters of a stats query: each narrows the counter rows summed (none: every row). */
export interface CounterFilter {
  account?: number;
  mailbox?: number;
  campaign?: number;
  broadcast?: number;
}

/** Reads daily_counts: each day from..to (YYYY-MM-DD, every day present, zeros where none) summed over the filtered rows. */
export async function readDailyCounts(db: Tx, from: string, to: string, filter: CounterFilter): Promise<DayCounts[]> {
  const sums = COUNTERS.map((c) => `COALESCE(sum(c.${c}), 0)::int AS ${c}`).join(', ');
  return rawQuery<DayCounts>(
    db,
    `SELECT to_char(d.day, 'YYYY-MM-DD') AS date, ${sums}
     FROM generate_series($1::date, $2::date, interval '1 day') AS d(day)
     LEFT JOIN daily_counts c ON c.day = d.day::date
       AND ($3::int IS NULL OR c.account_id = $3) AND ($4::int IS NULL OR c.mailbox_id = $4)
       AND ($5::int IS NULL OR c.campaign_id = $5) AND ($6::int IS NULL OR c.broadcast_id = $6)
     GROUP BY d.day ORDER BY d.day`,
    [from, to, filter.account ?? null, filter.mailbox ?? null, filter.campaign ?? null, filter.broadcast ?? null],
    'read-stats',
  );
}

/** Reads whether the account, mailbox, campaign and broadcast a filter names exist (true for each not named). */
export async function filterRowsExist(db: Tx, filter: CounterFilter): Promise<Record<keyof CounterFilter, boolean> | undefined> {
  const [row] = await rawQuery<Record<keyof CounterFilter, boolean>>(
    db,
    `SELECT ($1::int IS NULL OR EXISTS (SELECT 1 FROM accounts WHERE id = $1)) AS account,
            ($2::int IS NULL OR EXISTS (SELECT 1 FROM mailboxes WHERE id = $2)) AS mailbox,
            ($3::int IS NULL OR EXISTS (SELECT 1 FROM campaigns WHERE id = $3)) AS campaign,
            ($4::int IS NULL OR EXISTS (SELECT 1 FROM broadcasts WHERE id = $4)) AS broadcast`,
    [filter.account ?? null, filter.mailbox ?? null, filter.campaign ?? null, filter.broadcast ?? null],
  );
  return row;
}

/** A broadcast's counters over its whole life (its funnel): one index range of its account's counter rows. */
export async function broadcastTotals(db: Tx, accountId: number, broadcastId: number): Promise<CounterTotals> {
  const sums = COUNTERS.map((c) => `COALESCE(sum(${c}), 0)::int AS ${c}`).join(', ');
  const [row] = await rawQuery<CounterTotals>(
    db,
    `SELECT ${sums} FROM daily_counts WHERE account_id = $1 AND broadcast_id = $2`,
    [accountId, broadcastId],
  );
  return row!;
}

/**
 * Records a request of a tracked link of a message: the link_clicks row of the message, address and kind (a scanner's
 * when `head`, or within `scannerWindowMs` of its delivery or before it) is inserted or counted up. A person's first
 * request of the link from that email is its unique click: it adds to the `clicked` counter and inserts the
 * `message.clicked` event, in the same statement; a replay only counts up the row (the first is the row whose count
 * is 1: a partitioned table answers no xmax in RETURNING). Null when the message is gone.
 */
export async function insertClick(
  db: Tx,
  click: { messageId: string; url: string; head: boolean },
  scannerWindowMs: number,
): Promise<{ scanner: boolean; first: boolean } | null> {
  const [row] = await rawQuery<{ scanner: boolean; first: boolean }>(
    db,
    `WITH m AS (
       SELECT id, account_id, mailbox_id, broadcast_id, prospect_id, send_id, "to", sent_at FROM messages WHERE id = $1::uuid
     ), c AS (
       INSERT INTO link_clicks (message_id, account_id, broadcast_id, url, scanner)
       SELECT m.id, m.account_id, m.broadcast_id, $2, ($3 OR m.sent_at IS NULL OR now() - m.sent_at < $4 * interval '1 millisecond') FROM m
       ON CONFLICT (message_id, url, scanner) DO UPDATE SET count = link_clicks.count + 1
       RETURNING scanner, (count = 1) AS first
     ), counted AS (
       ${countMessagesSql('m', 'clicked', 'EXISTS (SELECT 1 FROM c WHERE NOT c.scanner AND c.first)')}
     ), event AS (
       INSERT INTO events (account_id, type, data)
       SELECT m.account_id, 'message.clicked', jsonb_build_object('id', m.id, 'send_id', m.send_id, 'to', m."to", 'url', $2::text, 'broadcast', m.broadcast_id)
       FROM m WHERE EXISTS (SELECT 1 FROM c WHERE NOT c.scanner AND c.first) AND ${subscribed('m.account_id', `'message.clicked'`)}
     )
     SELECT scanner, first FROM c`,
    [click.messageId, click.url, click.head, scannerWindowMs],
    'record-click',
  );
  return row ?? null;
}

/**
 * Inserts or counts up the message_opens row of a message; the first open also adds to the `opened` counter and
 * inserts the `message.opened` event, in one statement. The first is the row whose count is 1 (a partitioned table
 * answers no xmax in RETURNING).
 */
export async function upsertOpen(db: Tx, messageId: string): Promise<void> {
  await rawQuery(
    db,
    `WITH m AS (
       SELECT id, account_id, mailbox_id, broadcast_id, prospect_id, send_id, "to" FROM messages WHERE id = $1::uuid
     ), first AS (
       INSERT INTO message_opens (message_id, account_id) SELECT m.id, m.account_id FROM m
       ON CONFLICT (message_id) DO UPDATE SET count = message_opens.count + 1, last_at = now()
       RETURNING (count = 1) AS inserted
     ), counted AS (
       ${countMessagesSql('m', 'opened', 'EXISTS (SELECT 1 FROM first WHERE first.inserted)')}
     )
     INSERT INTO events (account_id, type, data)
     SELECT m.account_id, 'message.opened', jsonb_build_object('id', m.id, 'send_id', m.send_id, 'to', m."to", 'broadcast', m.broadcast_id)
     FROM m WHERE EXISTS (SELECT 1 FROM first WHERE first.inserted) AND ${subscribed('m.account_id', `'message.opened'`)}`,
    [messageId],
    'record-open',
  );
}

/**
 * Clicks per link of a broadcast, most unique clicks first: the emails whose reader clicked it (`unique_clicks`), every
 * person's request of it, replays included (`clicks`), and the scanners' requests apart.
 */
export async function broadcastLinks(db: Tx, broadcastId: number): Promise<{ url: string; unique_clicks: number; clicks: number; scanner_clicks: number }[]> {
  return rawQuery(
    db,
    `SELECT url, (count(*) FILTER (WHERE NOT scanner))::int AS unique_clicks,
            COALESCE(sum(count) FILTER (WHERE NOT scanner), 0)::int AS clicks,
            COALESCE(sum(count) FILTER (WHERE scanner), 0)::int AS scanner_clicks
     FROM link_clicks WHERE broadcast_id = $1 GROUP BY url ORDER BY 2 DESC, 3 DESC, url LIMIT 200`,
    [broadcastId],
  );
}
