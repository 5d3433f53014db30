import { rawQuery, type Tx } from '../../db';
import { isComplaint, isDeadBounce } from './verdicts';

/** The auto-pause windows' SQL (auto-pause.ts): the windows judged, what is watched, and the pause itself. */

export interface WindowCounts {
  ended: number;
  dead: number;
  complained: number;
}

/**
 * The windows of `window` ended emails a judgement looks at (auto-pause.ts): `latest`, the last `window` ended; and,
 * among every window the ended emails passed through that holds at least `least` emails, the one with the largest
 * share of dead bounces and the one with the largest share of complaints (null when none holds `least`).
 */
export interface JudgedWindows {
  latest: WindowCounts;
  mostDead: WindowCounts | null;
  mostComplained: WindowCounts | null;
}

/**
 * Counts, in one statement, the windows among `messages` (an SQL FROM ... WHERE naming rows `m`) in the order their
 * emails ended: the window ending at each of the last `window` ended emails (read from the last 2 x window - 1), and the
 * first `least` emails (the first window that can be judged, however many ended together after it).
 */
async function countWindows(tx: Tx, from: string, values: unknown[], window: number, least: number): Promise<JudgedWindows> {
  const w = Math.trunc(window);
  const n = values.length;
  const rows = await rawQuery<WindowCounts & { which: 'latest' | 'dead' | 'complained' }>(
    tx,
    `WITH e AS MATERIALIZED (
       SELECT m.id, m.updated_at, ${isDeadBounce('m')} AS dead, ${isComplaint('m')} AS complained
       ${from} AND m.status IN ('sent', 'bounced', 'failed')
     ),
     tail AS (SELECT * FROM e ORDER BY updated_at DESC, id DESC LIMIT ${2 * w - 1}),
     pos AS (
       SELECT count(*) OVER w AS ended, count(*) FILTER (WHERE dead) OVER w AS dead,
              count(*) FILTER (WHERE complained) OVER w AS complained,
              row_number() OVER (ORDER BY updated_at DESC, id DESC) AS from_end, count(*) OVER () AS held
       FROM tail WINDOW w AS (ORDER BY updated_at, id ROWS BETWEEN ${w - 1} PRECEDING AND CURRENT ROW)
     ),
     judged AS (
       SELECT ended::int, dead::int, complained::int FROM pos WHERE (from_end <= ${w} OR held < ${2 * w - 1}) AND ended >= $${n + 1}
       UNION ALL
       SELECT count(*)::int, (count(*) FILTER (WHERE dead))::int, (count(*) FILTER (WHERE complained))::int
       FROM (SELECT * FROM e ORDER BY updated_at, id LIMIT $${n + 1}) head HAVING count(*) >= $${n + 1}
     )
     (SELECT 'latest' AS which, ended::int, dead::int, complained::int FROM pos WHERE from_end = 1)
     UNION ALL (SELECT 'dead', * FROM judged ORDER BY dead::float8 / ended DESC, ended LIMIT 1)
     UNION ALL (SELECT 'complained', * FROM judged ORDER BY complained::float8 / ended DESC, ended LIMIT 1)`,
    [...values, least],
  );
  const of = (which: string) => {
    const row = rows.find((r) => r.which === which);
    return row ? { ended: row.ended, dead: row.dead, complained: row.complained } : null;
  };
  return { latest: of('latest') ?? { ended: 0, dead: 0, complained: 0 }, mostDead: of('dead'), mostComplained: of('complained') };
}

/** The windows of the campaign's ended sequence emails since `since` (countWindows). */
export function campaignWindows(tx: Tx, campaignId: number, since: Date | null, window: number, least: number): Promise<JudgedWindows> {
  return countWindows(
    tx,
    `FROM prospects p JOIN messages m ON m.prospect_id = p.id
     WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [campaignId, since],
    window,
    least,
  );
}

/** The windows of the broadcast's ended copies since `since` (countWindows). */
export function broadcastWindows(tx: Tx, broadcastId: number, since: Date | null, window: number, least: number): Promise<JudgedWindows> {
  return countWindows(
    tx,
    `FROM messages m WHERE m.broadcast_id = $1 AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [broadcastId, since],
    window,
    least,
  );
}

/** A campaign's `pause_on` (auto-pause.ts): the rates that pause it, over its last `window` emails. */
export interface PauseRates {
  bounce_rate: number | null;
  complaint_rate: number | null;
  window: number;
}

export interface PausableCampaign {
  id: number;
  account_id: number;
  name: string;
  pause_on: Partial<PauseRates> | null;
  window_since: Date | null;
}

/** Reads a running campaign that has auto-pause rates; undefined otherwise. */
export async function runningCampaignWithPauseOn(tx: Tx, campaignId: number): Promise<PausableCampaign | undefined> {
  const [c] = await rawQuery<PausableCampaign>(
    tx,
    `SELECT id, account_id, name, pause_on, window_since FROM campaigns WHERE id = $1 AND status = 'running' AND pause_on IS NOT NULL`,
    [campaignId],
  );
  return c;
}

/** Whose auto-pause window: a campaign's or a broadcast's. */
export type WindowOwner = { campaign: number } | { broadcast: number };

const ownerColumn = (owner: WindowOwner) => ('campaign' in owner ? { column: 'campaign_id', id: owner.campaign } : { column: 'broadcast_id', id: owner.broadcast });

/** Watches the window: each of its emails that ends judges it again (pause_watches; auto-pause.ts). */
export async function watchWindow(tx: Tx, owner: WindowOwner): Promise<void> {
  const { column, id } = ownerColumn(owner);
  await rawQuery(tx, `INSERT INTO pause_watches (${column}) VALUES ($1) ON CONFLICT (${column}) DO NOTHING`, [id]);
}

/** Stops watching the window (judged for good, paused, or no longer running). */
export async function unwatchWindow(tx: Tx, owner: WindowOwner): Promise<void> {
  const { column, id } = ownerColumn(owner);
  await rawQuery(tx, `DELETE FROM pause_watches WHERE ${column} = $1`, [id]);
}

/** Pauses a running campaign with the service's reason; false when it was no longer running. */
export async function pauseRunningCampaign(tx: Tx, campaignId: number, reason: string): Promise<boolean> {
  const paused = await rawQuery(tx, `UPDATE campaigns SET status = 'paused', paused_reason = $2, updated_at = now() WHERE id = $1 AND status = 'running' RETURNING id`, [campaignId, reason]);
  return paused.length > 0;
}

/** Reads the campaign (through its prospect) or the broadcast an email belongs to; undefined for an unknown email. */
export async function campaignOrBroadcastOf(tx: Tx, messageId: string): Promise<{ campaign_id: number | null; broadcast_id: number | null } | undefined> {
  const [m] = await rawQuery<{ campaign_id: number | null; broadcast_id: number | null }>(
    tx,
    `SELECT p.campaign_id, m.broadcast_id FROM messages m LEFT JOIN prospects p ON p.id = m.prospect_id WHERE m.id = $1::uuid`,
    [messageId],
  );
  return m;
}
