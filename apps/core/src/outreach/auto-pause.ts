import { deleteUnclaimedCopies, pauseSendingBroadcast, sendingBroadcast } from '../broadcasts/repository';
import type { Db, Tx } from '../db';
import type { WatchedWindow } from '../delivery/repository';
import { logger } from '../logger';
import { emitEvent } from '../events';
import { broadcastWindows, campaignWindows, campaignOrBroadcastOf, pauseRunningCampaign, runningCampaignWithPauseOn, unwatchWindow, watchWindow, type PauseRates, type JudgedWindows, type WindowCounts, type WindowOwner } from './repository/windows';

/**
 * Auto-pause (docs/outreach.md): when, over the last `window` outreach emails of a running campaign that ended (at
 * least MIN_ENDED), the share of dead-address bounces or of complaints passes its rate, the service pauses the campaign
 * with `paused_reason` and the `campaign.paused` event. A sending broadcast pauses the same way over its last 1,000
 * copies (`broadcast.paused`). Resuming clears the reason and starts a new window (`window_since`).
 *
 * The rule is judged whenever the window changes in a way that can pass a rate, whatever came first:
 * - a bounce or a complaint comes in: judged in the transaction that records it (autoPauseAfter);
 * - an email ends well (or fails for good) while the window is short of MIN_ENDED and holds a bounce or a complaint:
 *   such a window is watched (pause_watches) when the bad outcome is judged, and each of its emails that ends judges
 *   it again (judgeWatchedWindows, after the worker's "sent" mark; autoPauseAfter after a final failure), until it
 *   reaches MIN_ENDED. A window that has MIN_ENDED emails is only diluted by good ones (dead / ended falls, or an old
 *   outcome leaves a full window), so from then on only bad outcomes need judging. The "sent" mark finds the watches
 *   in its own statement: with none (the usual case) the delivery path pays nothing more.
 * A judgement looks at every window the ended emails passed through, not only the last (firstPassing): emails that
 * end together in one "sent" mark, or a bounce recorded after them, skip no window that was over a rate.
 */
export const MIN_ENDED = 20;
export const BROADCAST_PAUSE_ON = { bounce_rate: 0.05, complaint_rate: 0.003, window: 1000 } as const;

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

/**
 * The first of the judged windows (the latest, then the one with the most dead bounces, then the one with the most
 * complaints) whose shares pass `rates`, with its reason; null when none does.
 */
export function firstPassing(windows: JudgedWindows, rates: PauseRates): { reason: string; counts: WindowCounts } | null {
  for (const counts of [windows.latest, windows.mostDead, windows.mostComplained]) {
    const reason = counts && pauseReason(counts, rates);
    if (reason) return { reason, counts };
  }
  return null;
}

/** A window short of MIN_ENDED that holds a bad outcome is watched; any other is not (judged for good, or clean). */
async function keepWatch(tx: Tx, owner: WindowOwner, counts: WindowCounts, passing: object | null): Promise<void> {
  const short = passing === null && counts.ended < MIN_ENDED && (counts.dead > 0 || counts.complained > 0);
  await (short ? watchWindow(tx, owner) : unwatchWindow(tx, owner));
}

async function checkCampaign(tx: Tx, campaignId: number): Promise<string | null> {
  const c = await runningCampaignWithPauseOn(tx, campaignId);
  if (!c) {
    // not running (a resume starts a new window) or not watched: nothing to judge later either
    await unwatchWindow(tx, { campaign: campaignId });
    return null;
  }
  const rates: PauseRates = { bounce_rate: 0.05, complaint_rate: 0.003, window: 100, ...c.pause_on };
  const windows = await campaignWindows(tx, c.id, c.window_since, rates.window, MIN_ENDED);
  const passing = firstPassing(windows, rates);
  await keepWatch(tx, { campaign: c.id }, windows.latest, passing);
  if (!passing) return null;
  const { reason, counts } = passing;
  if (!(await pauseRunningCampaign(tx, c.id, reason))) return null;
  await emitEvent(tx, c.account_id, 'campaign.paused', { campaign: c.id, name: c.name, reason, ended: counts.ended, bounced: counts.dead, complained: counts.complained });
  return reason;
}

async function checkBroadcast(tx: Tx, broadcastId: number): Promise<string | null> {
  const b = await sendingBroadcast(tx, broadcastId);
  if (!b) {
    await unwatchWindow(tx, { broadcast: broadcastId });
    return null;
  }
  const windows = await broadcastWindows(tx, b.id, b.window_since, BROADCAST_PAUSE_ON.window, MIN_ENDED);
  const passing = firstPassing(windows, BROADCAST_PAUSE_ON);
  await keepWatch(tx, { broadcast: b.id }, windows.latest, passing);
  if (!passing) return null;
  const { reason, counts } = passing;
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

/**
 * After emails of watched windows ended (the worker's "sent" mark, delivery/fast-claim.ts): judges each window again,
 * each in its own transaction. The marks are committed whatever happens here; a failed judgement is logged, and the
 * window stays watched for its next email.
 */
export async function judgeWatchedWindows(db: Db, watched: WatchedWindow[]): Promise<void> {
  for (const w of watched) {
    try {
      await db.$transaction((tx) => (w.campaign_id !== null ? checkCampaign(tx, w.campaign_id) : checkBroadcast(tx, w.broadcast_id!)));
    } catch (err) {
      logger.warn({ err: (err as Error).message, campaign: w.campaign_id, broadcast: w.broadcast_id }, 'auto-pause: could not judge a watched window');
    }
  }
}
