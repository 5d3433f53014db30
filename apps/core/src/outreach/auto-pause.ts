import { deleteUnclaimedCopies, pauseSendingBroadcast, sendingBroadcast } from '../broadcasts/repository';
import type { Tx } from '../db';
import { emitEvent } from '../events';
import { broadcastWindow, campaignWindow, campaignOrBroadcastOf, pauseRunningCampaign, runningCampaignWithPauseOn, type WindowCounts } from './repository';

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

async function checkCampaign(tx: Tx, campaignId: number): Promise<string | null> {
  const c = await runningCampaignWithPauseOn(tx, campaignId);
  if (!c) return null;
  const rates: PauseRates = { bounce_rate: 0.05, complaint_rate: 0.003, window: 100, ...c.pause_on };
  const counts = await campaignWindow(tx, c.id, c.window_since, rates.window);
  const reason = pauseReason(counts, rates);
  if (!reason) return null;
  if (!(await pauseRunningCampaign(tx, c.id, reason))) return null;
  await emitEvent(tx, c.account_id, 'campaign.paused', { campaign: c.id, name: c.name, reason, ended: counts.ended, bounced: counts.dead, complained: counts.complained });
  return reason;
}

async function checkBroadcast(tx: Tx, broadcastId: number): Promise<string | null> {
  const b = await sendingBroadcast(tx, broadcastId);
  if (!b) return null;
  const counts = await broadcastWindow(tx, b.id, b.window_since, BROADCAST_PAUSE_ON.window);
  const reason = pauseReason(counts, BROADCAST_PAUSE_ON);
  if (!reason) return null;
  if (!(await pauseSendingBroadcast(tx, b.id, reason))) return null;
  // as a pause by request (broadcasts/service.ts): the copies not yet claimed are taken back; a resume writes them again
  await deleteUnclaimedCopies(tx, b.id);
  await emitEvent(tx, b.account_id, 'broadcast.paused', { broadcast: b.id, subject: b.subject, reason, ended: counts.ended, bounced: counts.dead, complained: counts.complained });
  return reason;
}

/**
 * After a bounce or a complaint about `messageId` was recorded (in the same transaction): pauses its campaign or
 * broadcast when the window's share now passes a rate. Returns the reason when it paused.
 */
export async function autoPauseAfter(tx: Tx, messageId: string): Promise<string | null> {
  const m = await campaignOrBroadcastOf(tx, messageId);
  if (m?.campaign_id) return checkCampaign(tx, m.campaign_id);
  if (m?.broadcast_id) return checkBroadcast(tx, m.broadcast_id);
  return null;
}
