import type { Tx } from '../db';
import { claimSlot, slotState } from './repository/slots';

/**
 * Per-mailbox outreach limits: at most `daily_limit` sequence emails per UTC day and at least `gap_seconds` between two.
 * The claim is one conditional UPDATE on the mailbox row, so it is atomic across any number of worker processes: the
 * row lock serialises concurrent claims and the second one re-evaluates the condition against the first one's result.
 * It runs inside the step's transaction, so a step that rolls back gives its slot back. Times are clock_timestamp(),
 * not now(): a claim that waited for the row lock must stamp the moment it got the slot, not its transaction's start.
 */
export type SlotClaim = { claimed: true; at: Date } | { claimed: false; until: Date; why: 'daily_limit' | 'gap' };

/**
 * The cap GET /admin/api/mailboxes shows as `effective_daily_limit`: the daily_limit, or during a warm-up
 * min(daily_limit, start + step x whole days since the warm-up was set), at `now`; the slot claims apply the same rule
 * in SQL (repository/slots.ts effectiveLimitSql).
 */
export function effectiveDailyLimit(m: { dailyLimit: number; warmupStart: number | null; warmupStep: number | null; warmupSince: Date | null }, now = new Date()): number {
  if (m.warmupStart === null || m.warmupSince === null) return m.dailyLimit;
  const days = Math.floor(Math.max(0, now.getTime() - m.warmupSince.getTime()) / 86_400_000);
  return Math.min(m.dailyLimit, m.warmupStart + (m.warmupStep ?? 0) * days);
}

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
