import type { Tx } from '../db';
import { BadRequest } from '../errors';
import { claimMailboxSlot, noSlot, type SlotClaim } from './limits';
import { claimUsualSlot } from './repository/slots';
import { rotationCandidates, setCampaignMailboxes, type RotationCandidate } from './repository/rotation';

/**
 * Mailbox rotation (docs/campaigns.md): a campaign may send from several mailboxes (`mailboxes: [id...]`; `mailbox`
 * is the one-mailbox form and the list's first). A prospect's first step goes out from the mailbox of the rotation
 * that has a free slot now and has sent the fewest outreach emails today (then the one idle longest), so the load
 * spreads evenly; its later steps go out from that same mailbox (prospects.mailbox_id), threaded, each waiting for that
 * mailbox's next free slot. A mailbox that is paused or over its bounce rate is passed over for first steps, never
 * failing the step: with none left the step waits.
 *
 * Taking a mailbox out of a running campaign keeps its row as inactive: it gets no new first steps, and the prospects
 * that started from it finish their sequence from it, in their thread (the reply comes back to the same mailbox).
 */

/** How long a first step waits when no mailbox of the rotation can send at all (all paused or over their bounce rate). */
const NO_MAILBOX_WAIT_MS = 15 * 60_000;

export const MAX_ROTATION = 100;

/** The mailbox list a create or change asks for: `mailboxes`, else `mailbox` alone; undefined when neither is given. */
export function rotationOf(input: { mailbox?: number; mailboxes?: number[] }): number[] | undefined {
  if (input.mailboxes !== undefined) {
    if (input.mailbox !== undefined && input.mailbox !== input.mailboxes[0]) throw new BadRequest('mailbox must be the first of mailboxes, or left out');
    const unique = [...new Set(input.mailboxes)];
    if (unique.length !== input.mailboxes.length) throw new BadRequest('mailboxes names a mailbox twice');
    return unique;
  }
  return input.mailbox !== undefined ? [input.mailbox] : undefined;
}

/** Writes the campaign's rotation: these mailboxes active in this order, any other it had kept as inactive. */
export async function saveRotation(tx: Tx, campaignId: number, mailboxes: number[]): Promise<void> {
  await setCampaignMailboxes(tx, campaignId, mailboxes);
}

export type MailboxSlot = (SlotClaim & { claimed: true; mailboxId: number; address: string }) | { claimed: false; until: Date; why: 'daily_limit' | 'gap' | 'mailboxes' };

/**
 * The mailbox a step goes out from, with its slot claimed (in the step's transaction: a rollback gives it back).
 * `own`: the prospect's mailbox (its first step went out from it), null before the first step.
 */
export async function claimStepMailbox(tx: Tx, campaign: { id: number; mailboxId: number; bounceRate: number | null; window: number }, own: number | null): Promise<MailboxSlot> {
  // most steps in one statement: a later step's own mailbox, or a one-mailbox campaign's, with a free slot now
  const usual = await claimUsualSlot(tx, campaign.id, own);
  if (usual) return { claimed: true, at: usual.at, mailboxId: usual.id, address: usual.address };
  const candidates = await rotationCandidates(tx, campaign.id, own, campaign.bounceRate, campaign.window);
  if (own !== null || candidates.length <= 1) {
    // a later step (or a one-mailbox campaign): its mailbox, waiting for its next free slot
    const mailbox = candidates.find((c) => c.id === (own ?? campaign.mailboxId)) ?? candidates[0];
    if (!mailbox) throw new Error(`campaign ${campaign.id} has no mailbox`);
    if (mailbox.paused) return { claimed: false, until: new Date(Date.now() + NO_MAILBOX_WAIT_MS), why: 'mailboxes' };
    // the usual claim above just tried this very mailbox: only why it has no slot is left to read
    return noSlot(tx, mailbox.id);
  }
  return firstStepSlot(tx, candidates);
}

/** In turn: the usable mailboxes, fewest sent today first (rotationCandidates' order); the first with a free slot. */
async function firstStepSlot(tx: Tx, candidates: RotationCandidate[]): Promise<MailboxSlot> {
  const usable = candidates.filter((c) => c.active && !c.paused && !c.over_bounce);
  let earliest: { until: Date; why: 'daily_limit' | 'gap' } | undefined;
  for (const mailbox of usable) {
    const slot = await claimMailboxSlot(tx, mailbox.id);
    if (slot.claimed) return { ...slot, mailboxId: mailbox.id, address: mailbox.address };
    if (!earliest || slot.until.getTime() < earliest.until.getTime()) earliest = { until: slot.until, why: slot.why };
  }
  return earliest ? { claimed: false, ...earliest } : { claimed: false, until: new Date(Date.now() + NO_MAILBOX_WAIT_MS), why: 'mailboxes' };
}
