import { rawQuery, type Tx } from '../../db';

/**
 * The mailboxes' sequence slots (limits.ts, rotation.ts): a mailbox's outreach cap today, its gap between two outreach
 * emails, and the one conditional UPDATE that takes a slot. The scheduler's claim (claim-due.ts) reads the same rules.
 */

/**
 * SQL: the mailbox's outreach cap today (a row `m` of mailboxes, at `at`): its daily_limit, or during a warm-up
 * min(daily_limit, start + step x whole days since the warm-up was set). The slot claim and the scheduler's claim use
 * it; mailboxes/daily-limit.ts effectiveDailyLimit is the same rule for what GET shows.
 */
export function effectiveLimitSql(m: string, at = 'clock_timestamp()'): string {
  return `CASE WHEN ${m}.warmup_start IS NULL THEN ${m}.daily_limit ELSE least(${m}.daily_limit,
    ${m}.warmup_start + ${m}.warmup_step * floor(greatest(0, extract(epoch FROM ${at} - ${m}.warmup_since)) / 86400)::int) END`;
}

/** SQL: the wait after the mailbox's last outreach email (seconds): the one drawn then, else gap_seconds. */
export const gapSql = (m: string) => `coalesce(${m}.sequence_gap, ${m}.gap_seconds)`;

/**
 * SQL: takes one sequence slot of the mailbox row(s) `which` selects when its day's cap and its gap allow (one
 * conditional UPDATE: the row lock serialises concurrent claims), drawing the next gap (`sequence_gap`).
 */
const claimSlotSql = (which: string, returning: string) => `UPDATE mailboxes m SET
      sequence_count = CASE WHEN sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date THEN sequence_count + 1 ELSE 1 END,
      sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date,
      sequence_last_at = greatest(clock_timestamp(), coalesce(sequence_last_at, clock_timestamp())),
      sequence_gap = gap_seconds * (1 + gap_jitter * random())
    WHERE ${which}
      AND (sequence_day IS DISTINCT FROM (clock_timestamp() AT TIME ZONE 'UTC')::date OR sequence_count < ${effectiveLimitSql('m')})
      AND ${effectiveLimitSql('m')} > 0
      AND (gap_seconds = 0 OR sequence_last_at IS NULL OR sequence_last_at <= clock_timestamp() - make_interval(secs => ${gapSql('m')}))
    RETURNING ${returning}`;

/** Takes one sequence slot of the mailbox (claimSlotSql). Answers the slot's time, or undefined. */
export async function claimSlot(tx: Tx, mailboxId: number): Promise<{ at: Date } | undefined> {
  const [claimed] = await rawQuery<{ at: Date }>(tx, claimSlotSql('id = $1', 'sequence_last_at AS at'), [mailboxId]);
  return claimed;
}

/**
 * A step's usual slot in one statement (rotation.ts claimStepMailbox): the slot of the prospect's own mailbox (`own`,
 * a later step), or for a first step of a campaign that sends from one mailbox only, the slot of that mailbox; only a
 * mailbox that can send (not paused, not waiting for a reconnect). Undefined otherwise (a rotation's first step, no
 * free slot, a mailbox that cannot send): the caller then reads the rotation and says why.
 */
export async function claimUsualSlot(tx: Tx, campaignId: number, own: number | null): Promise<{ id: number; address: string; at: Date } | undefined> {
  const which = `m.id = coalesce($2::int, (SELECT c.mailbox_id FROM campaigns c WHERE c.id = $1
        AND NOT EXISTS (SELECT 1 FROM campaign_mailboxes cm WHERE cm.campaign_id = c.id AND cm.mailbox_id <> c.mailbox_id)))
      AND NOT (m.paused OR m.auth_status = 'needs_reconnect')`;
  const [claimed] = await rawQuery<{ id: number; address: string; at: Date }>(tx, claimSlotSql(which, 'm.id, m.address, m.sequence_last_at AS at'), [campaignId, own]);
  return claimed;
}

/** Reads why the mailbox has no slot: its day is full (and when the next begins), or when its gap ends. */
export async function slotState(tx: Tx, mailboxId: number): Promise<{ full: boolean; next_day: Date; gap_until: Date | null } | undefined> {
  const [state] = await rawQuery<{ full: boolean; next_day: Date; gap_until: Date | null }>(
    tx,
    `SELECT
      (${effectiveLimitSql('m')} <= 0 OR (sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date AND sequence_count >= ${effectiveLimitSql('m')})) AS full,
      (((clock_timestamp() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC') AS next_day,
      sequence_last_at + make_interval(secs => ${gapSql('m')}) AS gap_until
    FROM mailboxes m WHERE id = $1`,
    [mailboxId],
  );
  return state;
}
