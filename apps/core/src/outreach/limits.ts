import { rawQuery, type Tx } from '../db';

/**
 * Per-mailbox outreach limits: at most `daily_limit` sequence emails per UTC day and at least `gap_seconds` between two.
 * The claim is one conditional UPDATE on the mailbox row, so it is atomic across any number of worker processes: the
 * row lock serialises concurrent claims and the second one re-evaluates the condition against the first one's result.
 * It runs inside the step's transaction, so a step that rolls back gives its slot back. Times are clock_timestamp(),
 * not now(): a claim that waited for the row lock must stamp the moment it got the slot, not its transaction's start.
 */
export type SlotClaim = { claimed: true; at: Date } | { claimed: false; until: Date; why: 'daily_limit' | 'gap' };

/**
 * SQL: the mailbox's outreach cap today (a row `m` of mailboxes, at `at`): its daily_limit, or during a warm-up
 * min(daily_limit, start + step x whole days since the warm-up was set). The claim here and the scheduler's claim use it;
 * effectiveDailyLimit is the same rule for what GET shows.
 */
export function effectiveLimitSql(m: string, at = 'clock_timestamp()'): string {
  return `CASE WHEN ${m}.warmup_start IS NULL THEN ${m}.daily_limit ELSE least(${m}.daily_limit,
    ${m}.warmup_start + ${m}.warmup_step * floor(greatest(0, extract(epoch FROM ${at} - ${m}.warmup_since)) / 86400)::int) END`;
}

/** SQL: the wait after the mailbox's last outreach email (seconds): the one drawn then, else gap_seconds. */
export const gapSql = (m: string) => `coalesce(${m}.sequence_gap, ${m}.gap_seconds)`;

/** The cap GET /admin/api/mailboxes shows as `effective_daily_limit` (effectiveLimitSql's rule, at `now`). */
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
  const [claimed] = await rawQuery<{ at: Date }>(
    tx,
    `UPDATE mailboxes m SET
      sequence_count = CASE WHEN sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date THEN sequence_count + 1 ELSE 1 END,
      sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date,
      sequence_last_at = greatest(clock_timestamp(), coalesce(sequence_last_at, clock_timestamp())),
      sequence_gap = gap_seconds * (1 + gap_jitter * random())
    WHERE id = $1
      AND (sequence_day IS DISTINCT FROM (clock_timestamp() AT TIME ZONE 'UTC')::date OR sequence_count < ${effectiveLimitSql('m')})
      AND ${effectiveLimitSql('m')} > 0
      AND (gap_seconds = 0 OR sequence_last_at IS NULL OR sequence_last_at <= clock_timestamp() - make_interval(secs => ${gapSql('m')}))
    RETURNING sequence_last_at AS at`,
    [mailboxId],
  );
  if (claimed) return { claimed: true, at: claimed.at };

  const [state] = await rawQuery<{ full: boolean; next_day: Date; gap_until: Date | null }>(
    tx,
    `SELECT
      (${effectiveLimitSql('m')} <= 0 OR (sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date AND sequence_count >= ${effectiveLimitSql('m')})) AS full,
      (((clock_timestamp() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC') AS next_day,
      sequence_last_at + make_interval(secs => ${gapSql('m')}) AS gap_until
    FROM mailboxes m WHERE id = $1`,
    [mailboxId],
  );
  if (!state) throw new Error(`mailbox ${mailboxId} is gone`);
  if (state.full) return { claimed: false, until: state.next_day, why: 'daily_limit' };
  return { claimed: false, until: state.gap_until ?? new Date(), why: 'gap' };
}
