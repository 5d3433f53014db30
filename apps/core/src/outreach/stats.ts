import { PROSPECT_STATUSES } from './view';
import { rawQuery, type Tx } from '../db';
import { NotFound } from '../errors';
import { isComplaint, isDeadBounce } from './auto-pause';

/**
 * GET /admin/api/campaigns/:id/stats (docs/outreach.md): how a campaign does, read from its rows in four statements.
 * - prospects: how many are in each status (every status named, 0 included);
 * - steps: per step, the emails that went out (`sent`: taken by the receiving server, bounced later or not), the dead-address
 *   bounces, and the prospects whose last step it was when they replied, auto-replied or unsubscribed;
 * - rates: replies over prospects written to; dead bounces and complaints over the emails that ended;
 * - days: the last `days` UTC days (oldest first, 0 included): emails sent, replies, dead bounces (on the day they ended).
 */
export interface CampaignStats {
  prospects: Record<string, number>;
  steps: { step: number; sent: number; bounced: number; replied: number; auto_replied: number; unsubscribed: number }[];
  rates: { reply: number; bounce: number; complaint: number };
  days: { date: string; sent: number; replied: number; bounced: number }[];
}

const share = (part: number, whole: number) => (whole ? Math.round((part / whole) * 10_000) / 10_000 : 0);

export async function campaignStats(db: Tx, campaignId: number, options: { days?: number; now?: Date } = {}): Promise<CampaignStats> {
  const days = options.days ?? 30;
  const now = options.now ?? new Date();
  const [campaign] = await rawQuery<{ steps: number }>(
    db,
    `SELECT (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps FROM campaigns c WHERE c.id = $1`,
    [campaignId],
  );
  if (!campaign) throw new NotFound(`no campaign with id ${campaignId}`);

  const statuses = await rawQuery<{ status: string; count: number }>(
    db,
    `SELECT status::text AS status, count(*)::int AS count FROM prospects WHERE campaign_id = $1 GROUP BY status`,
    [campaignId],
  );
  const prospects = Object.fromEntries(PROSPECT_STATUSES.map((s) => [s, 0]));
  for (const row of statuses) prospects[row.status] = row.count;

  // emails per step, and the prospects whose last step it is, by how they answered
  const perStep = await rawQuery<{ step: number; sent: number; bounced: number; complained: number; ended: number; replied: number; auto_replied: number; unsubscribed: number }>(
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
    [campaignId, campaign.steps],
  );
  const total = (key: keyof (typeof perStep)[number]) => perStep.reduce((sum, s) => sum + s[key], 0);
  const written = await rawQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM prospects WHERE campaign_id = $1 AND step > 0`, [campaignId]);

  const daily = await rawQuery<{ date: string; sent: number; replied: number; bounced: number }>(
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

  return {
    prospects,
    steps: perStep.map(({ step, sent, bounced, replied, auto_replied, unsubscribed }) => ({ step, sent, bounced, replied, auto_replied, unsubscribed })),
    rates: { reply: share(total('replied'), written[0]!.n), bounce: share(total('bounced'), total('ended')), complaint: share(total('complained'), total('ended')) },
    days: daily,
  };
}
