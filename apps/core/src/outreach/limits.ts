import type { Tx } from '../db';

/**
 * Per-mailbox outreach limits: at most `daily_limit` sequence emails per UTC day and at least `gap_seconds` between two.
 * The claim is one conditional UPDATE on the mailbox row, so it is atomic across any number of worker processes: the
 * row lock serialises concurrent claims and the second one re-evaluates the condition against the first one's result.
 * It runs inside the step's transaction, so a step that rolls back gives its slot back. Times are clock_timestamp(),
 * not now(): a claim that waited for the row lock must stamp the moment it got the slot, not its transaction's start.
 */
export type SlotClaim = { claimed: true; at: Date } | { claimed: false; until: Date; why: 'daily_limit' | 'gap' };

export async function claimMailboxSlot(tx: Tx, mailboxId: number): Promise<SlotClaim> {
  const claimed = await tx.$queryRaw<{ at: Date }[]>`
    UPDATE mailboxes SET
      sequence_count = CASE WHEN sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date THEN sequence_count + 1 ELSE 1 END,
      sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date,
      sequence_last_at = greatest(clock_timestamp(), coalesce(sequence_last_at, clock_timestamp()))
    WHERE id = ${mailboxId}
      AND (sequence_day IS DISTINCT FROM (clock_timestamp() AT TIME ZONE 'UTC')::date OR sequence_count < daily_limit)
      AND daily_limit > 0
      AND (gap_seconds = 0 OR sequence_last_at IS NULL OR sequence_last_at <= clock_timestamp() - make_interval(secs => gap_seconds))
    RETURNING sequence_last_at AS at`;
  if (claimed[0]) return { claimed: true, at: claimed[0].at };

  const [state] = await tx.$queryRaw<{ full: boolean; next_day: Date; gap_until: Date | null }[]>`
    SELECT
      (daily_limit = 0 OR (sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date AND sequence_count >= daily_limit)) AS full,
      (((clock_timestamp() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC') AS next_day,
      sequence_last_at + make_interval(secs => gap_seconds) AS gap_until
    FROM mailboxes WHERE id = ${mailboxId}`;
  if (!state) throw new Error(`mailbox ${mailboxId} is gone`);
  if (state.full) return { claimed: false, until: state.next_day, why: 'daily_limit' };
  return { claimed: false, until: state.gap_until ?? new Date(), why: 'gap' };
}
