import type { Tx } from '../db';
import { claimSlot, slotState } from './repository/slots';

/**
 * Per-mailbox outreach limits: at most `daily_limit` sequence emails per UTC day and at least `gap_seconds` between two.
 * The claim is one conditional UPDATE on the mailbox row, so it is atomic across any number of worker processes: the
 * row lock serialises concurrent claims and the second one re-evaluates the condition against the first one's result.
 * It runs inside the step's transaction, so a step that rolls back gives its slot back. Times are clock_timestamp(),
 * not now(): a claim that waited for the row lock must stamp the moment it got the slot, not its transaction's start.
 * The day's cap during a warm-up is the mailbox's own rule (mailboxes/daily-limit.ts), applied here in SQL.
 */
export type SlotClaim = { claimed: true; at: Date } | { claimed: false; until: Date; why: 'daily_limit' | 'gap' };

/**
 * Claims a slot. The wait before the next one is drawn here, uniformly from [gap_seconds, gap_seconds x (1 +
 * gap_jitter)], and kept on the row (`sequence_gap`): the next claim and the scheduler read it back.
 */
export async function claimMailboxSlot(tx: Tx, mailboxId: number): Promise<SlotClaim> {
  const claimed = await claimSlot(tx, mailboxId);
  return claimed ? { claimed: true, at: claimed.at } : noSlot(tx, mailboxId);
}

/** Why a mailbox whose slot claim just failed has none: its day is full, or its gap runs until when. */
export async function noSlot(tx: Tx, mailboxId: number): Promise<Extract<SlotClaim, { claimed: false }>> {
  const state = await slotState(tx, mailboxId);
  if (!state) throw new Error(`mailbox ${mailboxId} is gone`);
  if (state.full) return { claimed: false, until: state.next_day, why: 'daily_limit' };
  return { claimed: false, until: state.gap_until ?? new Date(), why: 'gap' };
}
