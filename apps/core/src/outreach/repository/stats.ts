import { rawQuery, type Tx } from '../../db';
import { isComplaint, isDeadBounce } from './verdicts';

/** The campaign stats' SQL (stats.ts): per mailbox, per status, per step and per day. */

/** Sends per mailbox of the campaign: its outreach emails that went out, and the prospects each one started. */
export function mailboxCounts(tx: Tx, campaignId: number): Promise<{ mailbox: number; address: string; sent: number; prospects: number }[]> {
  return rawQuery<{ mailbox: number; address: string; sent: number; prospects: number }>(
    tx,
    `WITH sent AS (
       SELECT m.mailbox_id, count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent
       FROM prospects p JOIN messages m ON m.prospect_id = p.id WHERE p.campaign_id = $1 AND m.kind = 'sequence' GROUP BY m.mailbox_id
     ), started AS (
       SELECT mailbox_id, count(*)::int AS prospects FROM prospects WHERE campaign_id = $1 AND mailbox_id IS NOT NULL GROUP BY mailbox_id
     ), ids AS (
       SELECT mailbox_id FROM campaign_mailboxes WHERE campaign_id = $1
       UNION SELECT mailbox_id FROM campaigns WHERE id = $1
       UNION SELECT mailbox_id FROM sent UNION SELECT mailbox_id FROM started
     )
     SELECT b.id AS mailbox, b.address, coalesce(s.sent, 0) AS sent, coalesce(st.prospects, 0) AS prospects
     FROM ids JOIN mailboxes b ON b.id = ids.mailbox_id LEFT JOIN sent s ON s.mailbox_id = b.id LEFT JOIN started st ON st.mailbox_id = b.id
     ORDER BY b.id`,
    [campaignId],
  );
}

/** Reads how many steps the campaign has; undefined when there is no such campaign. */
export async function campaignStepCount(db: Tx, campaignId: number): Promise<number | undefined> {
  const [campaign] = await rawQuery<{ steps: number }>(
    db,
    `SELECT (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps FROM campaigns c WHERE c.id = $1`,
    [campaignId],
  );
  return campaign?.steps;
}

/** Counts the campaign's prospects by status (the statuses it has). */
export function prospectStatusCounts(db: Tx, campaignId: number): Promise<{ status: string; count: number }[]> {
  return rawQuery<{ status: string; count: number }>(
    db,
    `SELECT status::text AS status, count(*)::int AS count FROM prospects WHERE campaign_id = $1 GROUP BY status`,
    [campaignId],
  );
}

export interface StepCounts {
  step: number;
  sent: number;
  bounced: number;
  complained: number;
  ended: number;
  replied: number;
  auto_replied: number;
  unsubscribed: number;
}

/** Counts per step (1 to at least `steps`): the emails sent, dead-bounced, complained of and ended, and the prospects whose last step it was by how they answered. */
export function stepCounts(db: Tx, campaignId: number, steps: number): Promise<StepCounts[]> {
  return rawQuery<StepCounts>(
    db,
    `WITH emails AS (
       SELECT m.step, count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent,
              count(*) FILTER (WHERE ${isDeadBounce('m')})::int AS bounced,
              count(*) FILTER (WHERE ${isComplaint('m')})::int AS complained,
              count(*) FILTER (WHERE m.status IN ('sent', 'bounced', 'failed'))::int AS ended
       FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' GROUP BY m.step
     ), answers AS (
       SELECT p.step, count(*) FILTER (WHERE p.reply IN ('human', 'reported'))::int AS replied,
              count(*) FILTER (WHERE p.reply = 'auto')::int AS auto_replied,
              count(*) FILTER (WHERE p.status = 'lost' AND p.reason = 'unsubscribed')::int AS unsubscribed
       FROM prospects p WHERE p.campaign_id = $1 AND p.step > 0 GROUP BY p.step
     )
     SELECT s.step, coalesce(e.sent, 0) AS sent, coalesce(e.bounced, 0) AS bounced, coalesce(e.complained, 0) AS complained,
            coalesce(e.ended, 0) AS ended, coalesce(a.replied, 0) AS replied, coalesce(a.auto_replied, 0) AS auto_replied,
            coalesce(a.unsubscribed, 0) AS unsubscribed
     FROM generate_series(1, greatest($2::int, (SELECT max(step) FROM emails))) AS s(step)
     LEFT JOIN emails e ON e.step = s.step LEFT JOIN answers a ON a.step = s.step ORDER BY s.step`,
    [campaignId, steps],
  );
}

/** Counts the campaign's prospects written to (past step 0). */
export async function writtenCount(db: Tx, campaignId: number): Promise<number> {
  const written = await rawQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM prospects WHERE campaign_id = $1 AND step > 0`, [campaignId]);
  return written[0]!.n;
}

/** Counts per UTC day, the last `days` up to `now` (oldest first, 0 included): emails sent, replies, dead bounces. */
export function dailyCounts(db: Tx, campaignId: number, now: Date, days: number): Promise<{ date: string; sent: number; replied: number; bounced: number }[]> {
  return rawQuery<{ date: string; sent: number; replied: number; bounced: number }>(
    db,
    `WITH d AS (
       SELECT generate_series(($2::timestamptz AT TIME ZONE 'UTC')::date - ($3::int - 1), ($2::timestamptz AT TIME ZONE 'UTC')::date, interval '1 day')::date AS date
     ), emails AS (
       SELECT (coalesce(m.sent_at, m.updated_at) AT TIME ZONE 'UTC')::date AS date,
              count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent, count(*) FILTER (WHERE ${isDeadBounce('m')})::int AS bounced
       FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND coalesce(m.sent_at, m.updated_at) >= (SELECT min(date) FROM d)::timestamp AT TIME ZONE 'UTC'
       GROUP BY 1
     ), replies AS (
       SELECT (p.replied_at AT TIME ZONE 'UTC')::date AS date, count(*)::int AS replied FROM prospects p
       WHERE p.campaign_id = $1 AND p.reply IN ('human', 'reported') AND p.replied_at >= (SELECT min(date) FROM d)::timestamp AT TIME ZONE 'UTC'
       GROUP BY 1
     )
     SELECT to_char(d.date, 'YYYY-MM-DD') AS date, coalesce(e.sent, 0) AS sent, coalesce(r.replied, 0) AS replied, coalesce(e.bounced, 0) AS bounced
     FROM d LEFT JOIN emails e ON e.date = d.date LEFT JOIN replies r ON r.date = d.date ORDER BY d.date`,
    [campaignId, now, days],
  );
}
