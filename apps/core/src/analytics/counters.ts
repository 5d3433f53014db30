import { rawQuery, type Tx } from '../db';
import type { CounterColumn } from './bounces';

export type { CounterColumn } from './bounces';

/** The counters of daily_counts, in the order GET /admin/api/stats answers them. */
export const COUNTERS = ['sent', 'delivered', 'bounced_dead', 'bounced_other', 'complained', 'unsubscribed', 'replied', 'clicked', 'opened'] as const;

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

/** Adds `n` to `column` of one counter row, in the transaction of the change it counts. */
export async function countEvent(tx: Tx, key: CounterKey, column: CounterColumn, n = 1): Promise<void> {
  const col = checked(column);
  await rawQuery(
    tx,
    `INSERT INTO daily_counts (account_id, mailbox_id, campaign_id, broadcast_id, day, ${col})
     VALUES ($1, $2, $3, $4, ${TODAY}, $5)
     ON CONFLICT (account_id, mailbox_id, campaign_id, broadcast_id, day) DO UPDATE SET ${col} = daily_counts.${col} + EXCLUDED.${col}`,
    [key.accountId, key.mailboxId, key.campaignId ?? 0, key.broadcastId ?? 0, n],
  );
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
