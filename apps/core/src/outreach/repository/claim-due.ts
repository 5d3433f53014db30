import type { PoolQuery } from '../../db';
import { effectiveLimitSql, gapSql } from './slots';

/**
 * The due steps that can go out now, claimed in one statement whose cost follows that work, not the backlog:
 * - a mailbox's free sequence slots are read once (0 at its daily cap or inside its gap; 1 when it has a gap; else
 *   what is left of its day), less the steps already queued for it and not yet written, so a mailbox that cannot
 *   send is passed over in one step, not row by row;
 * - each mailbox gives at most its free slots of its campaigns' due prospects, oldest first, and at most its share of
 *   the batch, so one claim reads about a batch of rows however many campaigns are due;
 * - a step that closes a prospect (the wait after the last step is over) needs no slot and is always taken.
 * A claimed row is marked `queued_at`; until its step job moves `next_at` on, the claim passes it over, so a backlog
 * waiting for the workers is not claimed and queued again every tick. A mark older than QUEUED_FRESH is taken as
 * lost (Redis lost the job) and the row is claimed again. The step job claims its mailbox slot for real (claimSlot).
 * Only the rows finally taken are locked (SKIP LOCKED): another scheduler at the same moment never gets them.
 */
const QUEUED_FRESH = "interval '60 seconds'";
/** SQL over a prospects row `p`: not marked, or its mark is from before its step came due, or older than QUEUED_FRESH. */
const UNQUEUED = `(p.queued_at IS NULL OR p.queued_at < p.next_at OR p.queued_at < now() - ${QUEUED_FRESH})`;
/** SQL over a prospects row `p`: still open to the sequence. */
const OPEN = `p.status IN ('ready', 'writing', 'later')`;

/** The running campaigns ($1: one of them, or all when null), each with its number of steps. */
const RUNNING = `
  SELECT c.id, c.mailbox_id, (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps
  FROM campaigns c WHERE c.status = 'running' AND ($1::int IS NULL OR c.id = $1::int)`;

/**
 * A lane per campaign and mailbox (rotation.ts): its one mailbox, or each of its rotation, active or taken out; with
 * `rotation`, how many of the campaign's lanes are active.
 */
const LANES = `
  SELECT l.*, count(*) FILTER (WHERE l.active) OVER (PARTITION BY l.id) AS rotation FROM (
    SELECT r.id, r.mailbox_id, r.steps, true AS active FROM running r
    UNION ALL -- no row twice: (campaign_id, mailbox_id) is campaign_mailboxes' key, and its own mailbox is left out
    SELECT r.id, cm.mailbox_id, r.steps, cm.active FROM running r JOIN campaign_mailboxes cm ON cm.campaign_id = r.id AND cm.mailbox_id <> r.mailbox_id
  ) l`;

/**
 * Per mailbox, the due steps claimed in the last QUEUED_FRESH and not yet written (their slot is spoken for), read
 * through the queued_at index: the rows marked in the last minute, not the due backlog.
 */
const QUEUED = `
  SELECT coalesce(p.mailbox_id, r.mailbox_id) AS mailbox_id, count(*)::int AS n FROM prospects p JOIN running r ON r.id = p.campaign_id
  WHERE p.queued_at >= now() - ${QUEUED_FRESH} AND p.queued_at >= p.next_at
    AND ${OPEN} AND p.next_at <= now() AND p.step < r.steps
  GROUP BY 1`;

/**
 * Per mailbox of a lane, its free sequence slots now: 0 when it cannot send, at its day's cap or inside its gap; 1
 * when it has a gap; else what is left of its day; less what is queued for it.
 */
const FREE = `
  SELECT m.id, greatest(0, CASE
      -- a paused mailbox, or one that needs reconnecting (OAuth2 consent refused), writes nothing: its due steps wait
      WHEN m.paused OR m.auth_status = 'needs_reconnect' OR m.cap <= 0 THEN 0
      WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date AND m.sequence_count >= m.cap THEN 0
      WHEN m.gap_seconds > 0 AND m.sequence_last_at > now() - make_interval(secs => ${gapSql('m')}) THEN 0
      WHEN m.gap_seconds > 0 THEN 1
      ELSE m.cap - CASE WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date THEN m.sequence_count ELSE 0 END
    END - coalesce(q.n, 0)) AS slots
  FROM (SELECT mb.*, ${effectiveLimitSql('mb', 'now()')} AS cap FROM mailboxes mb WHERE mb.id IN (SELECT mailbox_id FROM lanes)) m
  LEFT JOIN queued q ON q.mailbox_id = m.id`;

/** Each mailbox with free slots may give at most this share of the batch ($2). */
const SHARE = `
  SELECT $2::int / greatest(1, count(*) FILTER (WHERE slots > 0))::int + 1 AS rows FROM free`;

/** A rotation's prospects before their first step: any active mailbox of it with a free slot may take them. */
const FIRST_LANES = `
  SELECT l.id, l.steps, sum(f.slots)::int AS slots FROM lanes l JOIN free f ON f.id = l.mailbox_id AND f.slots > 0
  WHERE l.rotation > 1 AND l.active GROUP BY l.id, l.steps`;

/**
 * Each lane of a mailbox with free slots gives its oldest due rows, at most what its mailbox may take (`cap`, with
 * their `rank` in the mailbox): rows read follow the slots, not the backlog. The rows it started come through the
 * (campaign_id, mailbox_id, next_at) index; for a one-mailbox campaign the rows not started yet through the partial
 * (campaign_id, next_at) WHERE mailbox_id IS NULL one; a rotation's mailbox never reads the rows of its campaign that
 * are not its own. Then each rotation's first steps (FIRST_LANES), ranked in their campaign.
 */
const OPEN_STEPS = `
  SELECT x.id, x.next_at, l.mailbox_id AS lane, least(f.slots, share.rows) AS cap,
         row_number() OVER (PARTITION BY l.mailbox_id ORDER BY x.next_at, x.id) AS rank
  FROM lanes l JOIN free f ON f.id = l.mailbox_id AND f.slots > 0 CROSS JOIN share
  CROSS JOIN LATERAL (
    SELECT u.id, u.next_at FROM (
      (SELECT p.id, p.next_at FROM prospects p
       WHERE p.campaign_id = l.id AND p.mailbox_id = l.mailbox_id AND p.next_at <= now() AND ${OPEN}
         AND p.step < l.steps AND ${UNQUEUED}
       ORDER BY p.next_at LIMIT least(f.slots, share.rows))
      UNION ALL
      (SELECT p.id, p.next_at FROM prospects p
       WHERE l.rotation <= 1 AND l.active AND p.campaign_id = l.id AND p.mailbox_id IS NULL AND p.next_at <= now()
         AND ${OPEN} AND p.step < l.steps AND ${UNQUEUED}
       ORDER BY p.next_at LIMIT least(f.slots, share.rows))
    ) u ORDER BY u.next_at LIMIT least(f.slots, share.rows)
  ) x
  UNION ALL
  SELECT x.id, x.next_at, -fl.id, least(fl.slots, share.rows), row_number() OVER (PARTITION BY fl.id ORDER BY x.next_at, x.id)
  FROM first_lanes fl CROSS JOIN share
  CROSS JOIN LATERAL (
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = fl.id AND p.mailbox_id IS NULL AND p.next_at <= now() AND ${OPEN}
      AND p.step < fl.steps AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT least(fl.slots, share.rows)
  ) x`;

/**
 * What may be taken: the open steps within their mailbox's cap, and every step that closes a prospect (the wait after
 * the last step is over: no slot needed), read through the (campaign_id, status, step) index: only the open rows past
 * the last step.
 */
const CANDIDATES = `
  SELECT id, next_at, false AS closing FROM open_steps WHERE rank <= cap
  UNION ALL
  SELECT p.id, p.next_at, true
  FROM running r
  CROSS JOIN LATERAL (
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = r.id AND p.status = ANY('{ready,writing,later}'::"ProspectStatus"[]) AND p.step >= r.steps
      AND p.next_at <= now() AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT $2::int
  ) p`;

/** The oldest $2 candidates, locked (SKIP LOCKED) by primary key: a join here let the planner hash the whole table. */
const TAKEN = `
  SELECT p.id FROM prospects p WHERE p.id = ANY(ARRAY(SELECT id FROM candidates ORDER BY next_at LIMIT $2::int))
  FOR UPDATE OF p SKIP LOCKED`;

/** The claim whole: the parts above in order, then the taken rows marked queued_at. */
export const CLAIM_DUE = `
WITH running AS (${RUNNING}
), lanes AS (${LANES}
), queued AS (${QUEUED}
), free AS (${FREE}
), share AS (${SHARE}
), first_lanes AS (${FIRST_LANES}
), open_steps AS (${OPEN_STEPS}
), candidates AS (${CANDIDATES}
), taken AS (${TAKEN}
)
UPDATE prospects p SET queued_at = now() FROM taken t WHERE p.id = t.id
RETURNING p.id, p.step, p.next_at`;

/**
 * Claims up to `limit` due prospects (of one campaign, or of every running one when null) and marks them queued_at
 * (CLAIM_DUE above), in the caller's transaction on the pool (db.ts poolTransaction): its 500 rows are not mapped
 * through Prisma. Not a named statement: Postgres's generic plan for it (after five runs) read every mailbox's marks
 * the slow way once the mailboxes were in their gap (50 ms a tick against 8), so each tick is planned for its values.
 */
export function claimDue(query: PoolQuery, campaignId: number | null, limit: number): Promise<{ id: number; step: number; next_at: Date }[]> {
  return query<{ id: number; step: number; next_at: Date }>(CLAIM_DUE, [campaignId, limit]);
}
