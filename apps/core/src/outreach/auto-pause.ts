import { rawQuery, type Tx } from '../db';
import { emitEvent } from '../events';

/**
 * Auto-pause (docs/outreach.md): when, over the last `window` outreach emails of a running campaign that ended (at
 * least MIN_ENDED), the share of dead-address bounces or of complaints passes its rate, the service pauses the campaign
 * with `paused_reason` and the `campaign.paused` event. A sending broadcast pauses the same way over its last 1,000
 * copies (`broadcast.paused`). Resuming clears the reason and starts a new window (`window_since`).
 *
 * The shares only rise when a bounce or a complaint comes in, so the check runs then (autoPauseAfter, in the
 * transaction that records it), never for an email that went out well: the delivery hot path pays nothing.
 */
export const MIN_ENDED = 20;
export const BROADCAST_PAUSE_ON = { bounce_rate: 0.05, complaint_rate: 0.003, window: 1000 } as const;

/**
 * SQL over a messages row: is it a dead-address bounce? The bounce reader's verdict on it (`messages.bounce`, its reason
 * userunknown, hostunknown, hasmoved or notaccept: docs/inbound.md), from a report or the SMTP answer at delivery; a
 * row bounced before bounces carried their reason counts by its status. The one place that says so.
 */
export function isDeadBounce(m: string): string {
  return `COALESCE((${m}.bounce->>'dead')::boolean, ${m}.status = 'bounced')`;
}

/** SQL over a messages row: did its recipient complain about it (an ARF report matched to it: docs/inbound.md)? */
export function isComplaint(m: string): string {
  return `EXISTS (SELECT 1 FROM inbound_messages i WHERE i.related_id = ${m}.id AND i.kind = 'complaint')`;
}

interface WindowCounts {
  ended: number;
  dead: number;
  complained: number;
}

export interface PauseRates {
  bounce_rate: number | null;
  complaint_rate: number | null;
  window: number;
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** Why these counts pause a campaign or broadcast under `rates` ("bounce rate 7.0% over the last 100 emails"), or null. */
export function pauseReason(counts: WindowCounts, rates: PauseRates): string | null {
  if (counts.ended < MIN_ENDED) return null;
  const over = `over the last ${counts.ended} emails`;
  const bounces = counts.dead / counts.ended;
  if (rates.bounce_rate !== null && bounces > rates.bounce_rate) return `bounce rate ${percent(bounces)} ${over}`;
  const complaints = counts.complained / counts.ended;
  if (rates.complaint_rate !== null && complaints > rates.complaint_rate) return `complaint rate ${percent(complaints)} ${over}`;
  return null;
}

/** The last `window` ended emails among `messages` (an SQL FROM ... WHERE naming rows `m`), counted in one statement. */
async function countWindow(tx: Tx, from: string, values: unknown[], window: number): Promise<WindowCounts> {
  const [row] = await rawQuery<WindowCounts>(
    tx,
    `WITH w AS (
       SELECT m.id, ${isDeadBounce('m')} AS dead, ${isComplaint('m')} AS complained
       ${from} AND m.status IN ('sent', 'bounced', 'failed')
       ORDER BY m.updated_at DESC LIMIT ${Math.trunc(window)}
     )
     SELECT count(*)::int AS ended, count(*) FILTER (WHERE dead)::int AS dead, count(*) FILTER (WHERE complained)::int AS complained FROM w`,
    values,
  );
  return row!;
}

interface CampaignRow {
  id: number;
  account_id: number;
  name: string;
  pause_on: Partial<PauseRates> | null;
  window_since: Date | null;
}

async function checkCampaign(tx: Tx, campaignId: number): Promise<string | null> {
  const [c] = await rawQuery<CampaignRow>(
    tx,
    `SELECT id, account_id, name, pause_on, window_since FROM campaigns WHERE id = $1 AND status = 'running' AND pause_on IS NOT NULL`,
    [campaignId],
  );
  if (!c) return null;
  const rates: PauseRates = { bounce_rate: 0.05, complaint_rate: 0.003, window: 100, ...c.pause_on };
  const counts = await countWindow(
    tx,
    `FROM prospects p JOIN messages m ON m.prospect_id = p.id
     WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [c.id, c.window_since],
    rates.window,
  );
  const reason = pauseReason(counts, rates);
  if (!reason) return null;
  const paused = await rawQuery(tx, `UPDATE campaigns SET status = 'paused', paused_reason = $2, updated_at = now() WHERE id = $1 AND status = 'running' RETURNING id`, [c.id, reason]);
  if (!paused.length) return null;
  await emitEvent(tx, c.account_id, 'campaign.paused', { campaign: c.id, name: c.name, reason, ended: counts.ended, bounced: counts.dead, complained: counts.complained });
  return reason;
}

async function checkBroadcast(tx: Tx, broadcastId: number): Promise<string | null> {
  const [b] = await rawQuery<{ id: number; account_id: number; subject: string; window_since: Date | null }>(
    tx,
    `SELECT id, account_id, subject, window_since FROM broadcasts WHERE id = $1 AND status = 'sending'`,
    [broadcastId],
  );
  if (!b) return null;
  const counts = await countWindow(
    tx,
    `FROM messages m WHERE m.broadcast_id = $1 AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [b.id, b.window_since],
    BROADCAST_PAUSE_ON.window,
  );
  const reason = pauseReason(counts, BROADCAST_PAUSE_ON);
  if (!reason) return null;
  const paused = await rawQuery(tx, `UPDATE broadcasts SET status = 'paused', paused_reason = $2, updated_at = now() WHERE id = $1 AND status = 'sending' RETURNING id`, [b.id, reason]);
  if (!paused.length) return null;
  // as a pause by request (broadcasts/service.ts): the copies not yet claimed are taken back; a resume writes them again
  await rawQuery(tx, `DELETE FROM messages WHERE broadcast_id = $1 AND status IN ('queued', 'deferred')`, [b.id]);
  await emitEvent(tx, b.account_id, 'broadcast.paused', { broadcast: b.id, subject: b.subject, reason, ended: counts.ended, bounced: counts.dead, complained: counts.complained });
  return reason;
}

/**
 * After a bounce or a complaint about `messageId` was recorded (in the same transaction): pauses its campaign or
 * broadcast when the window's share now passes a rate. Returns the reason when it paused.
 */
export async function autoPauseAfter(tx: Tx, messageId: string): Promise<string | null> {
  const [m] = await rawQuery<{ campaign_id: number | null; broadcast_id: number | null }>(
    tx,
    `SELECT p.campaign_id, m.broadcast_id FROM messages m LEFT JOIN prospects p ON p.id = m.prospect_id WHERE m.id = $1::uuid`,
    [messageId],
  );
  if (m?.campaign_id) return checkCampaign(tx, m.campaign_id);
  if (m?.broadcast_id) return checkBroadcast(tx, m.broadcast_id);
  return null;
}
