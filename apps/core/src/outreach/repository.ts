import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import { Prisma, rawQuery, type PoolQuery, type Tx } from '../db';

/**
 * Outreach's SQL, and nothing else writes it: campaigns, their prospects, the mailboxes' sequence slots, the
 * campaign stats and the auto-pause windows. Typed Prisma calls stay in the modules that use them.
 */

// ---- mailbox slots (limits.ts) ----

/**
 * SQL: the mailbox's outreach cap today (a row `m` of mailboxes, at `at`): its daily_limit, or during a warm-up
 * min(daily_limit, start + step x whole days since the warm-up was set). The slot claim and the scheduler's claim use
 * it; limits.ts effectiveDailyLimit is the same rule for what GET shows.
 */
function effectiveLimitSql(m: string, at = 'clock_timestamp()'): string {
  return `CASE WHEN ${m}.warmup_start IS NULL THEN ${m}.daily_limit ELSE least(${m}.daily_limit,
    ${m}.warmup_start + ${m}.warmup_step * floor(greatest(0, extract(epoch FROM ${at} - ${m}.warmup_since)) / 86400)::int) END`;
}

/** SQL: the wait after the mailbox's last outreach email (seconds): the one drawn then, else gap_seconds. */
const gapSql = (m: string) => `coalesce(${m}.sequence_gap, ${m}.gap_seconds)`;

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

// ---- the scheduler's claim (scheduler.ts) ----

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
const UNQUEUED = `(p.queued_at IS NULL OR p.queued_at < p.next_at OR p.queued_at < now() - ${QUEUED_FRESH})`;
export const CLAIM_DUE = `
WITH running AS (
  SELECT c.id, c.mailbox_id, (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps
  FROM campaigns c WHERE c.status = 'running' AND ($1::int IS NULL OR c.id = $1::int)
), lanes AS (
  -- a lane per campaign and mailbox (rotation.ts): its one mailbox, or each of its rotation, active or taken out
  SELECT l.*, count(*) FILTER (WHERE l.active) OVER (PARTITION BY l.id) AS rotation FROM (
    SELECT r.id, r.mailbox_id, r.steps, true AS active FROM running r
    UNION ALL -- no row twice: (campaign_id, mailbox_id) is campaign_mailboxes' key, and its own mailbox is left out
    SELECT r.id, cm.mailbox_id, r.steps, cm.active FROM running r JOIN campaign_mailboxes cm ON cm.campaign_id = r.id AND cm.mailbox_id <> r.mailbox_id
  ) l
), queued AS (
  -- read through the queued_at index: the rows marked in the last minute, not the due backlog
  SELECT coalesce(p.mailbox_id, r.mailbox_id) AS mailbox_id, count(*)::int AS n FROM prospects p JOIN running r ON r.id = p.campaign_id
  WHERE p.queued_at >= now() - ${QUEUED_FRESH} AND p.queued_at >= p.next_at
    AND p.status IN ('ready', 'writing', 'later') AND p.next_at <= now() AND p.step < r.steps
  GROUP BY 1
), free AS (
  SELECT m.id, greatest(0, CASE
      -- a paused mailbox, or one that needs reconnecting (OAuth2 consent refused), writes nothing: its due steps wait
      WHEN m.paused OR m.auth_status = 'needs_reconnect' OR m.cap <= 0 THEN 0
      WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date AND m.sequence_count >= m.cap THEN 0
      WHEN m.gap_seconds > 0 AND m.sequence_last_at > now() - make_interval(secs => ${gapSql('m')}) THEN 0
      WHEN m.gap_seconds > 0 THEN 1
      ELSE m.cap - CASE WHEN m.sequence_day = (now() AT TIME ZONE 'UTC')::date THEN m.sequence_count ELSE 0 END
    END - coalesce(q.n, 0)) AS slots
  FROM (SELECT mb.*, ${effectiveLimitSql('mb', 'now()')} AS cap FROM mailboxes mb WHERE mb.id IN (SELECT mailbox_id FROM lanes)) m
  LEFT JOIN queued q ON q.mailbox_id = m.id
), share AS (
  SELECT $2::int / greatest(1, count(*) FILTER (WHERE slots > 0))::int + 1 AS rows FROM free
), first_lanes AS (
  -- a rotation's prospects before their first step: any active mailbox of it with a free slot may take them
  SELECT l.id, l.steps, sum(f.slots)::int AS slots FROM lanes l JOIN free f ON f.id = l.mailbox_id AND f.slots > 0
  WHERE l.rotation > 1 AND l.active GROUP BY l.id, l.steps
), open_steps AS (
  -- each lane of a mailbox with free slots gives its oldest due rows, at most what its mailbox may take: rows read
  -- follow the slots, not the backlog
  SELECT x.id, x.next_at, l.mailbox_id AS lane, least(f.slots, share.rows) AS cap,
         row_number() OVER (PARTITION BY l.mailbox_id ORDER BY x.next_at, x.id) AS rank
  FROM lanes l JOIN free f ON f.id = l.mailbox_id AND f.slots > 0 CROSS JOIN share
  CROSS JOIN LATERAL (
    -- the rows it started through the (campaign_id, mailbox_id, next_at) index, and for a one-mailbox campaign the
    -- rows not started yet through the partial (campaign_id, next_at) WHERE mailbox_id IS NULL one; a rotation's
    -- mailbox never reads the rows of its campaign that are not its own
    SELECT u.id, u.next_at FROM (
      (SELECT p.id, p.next_at FROM prospects p
       WHERE p.campaign_id = l.id AND p.mailbox_id = l.mailbox_id AND p.next_at <= now() AND p.status IN ('ready', 'writing', 'later')
         AND p.step < l.steps AND ${UNQUEUED}
       ORDER BY p.next_at LIMIT least(f.slots, share.rows))
      UNION ALL
      (SELECT p.id, p.next_at FROM prospects p
       WHERE l.rotation <= 1 AND l.active AND p.campaign_id = l.id AND p.mailbox_id IS NULL AND p.next_at <= now()
         AND p.status IN ('ready', 'writing', 'later') AND p.step < l.steps AND ${UNQUEUED}
       ORDER BY p.next_at LIMIT least(f.slots, share.rows))
    ) u ORDER BY u.next_at LIMIT least(f.slots, share.rows)
  ) x
  UNION ALL
  SELECT x.id, x.next_at, -fl.id, least(fl.slots, share.rows), row_number() OVER (PARTITION BY fl.id ORDER BY x.next_at, x.id)
  FROM first_lanes fl CROSS JOIN share
  CROSS JOIN LATERAL (
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = fl.id AND p.mailbox_id IS NULL AND p.next_at <= now() AND p.status IN ('ready', 'writing', 'later')
      AND p.step < fl.steps AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT least(fl.slots, share.rows)
  ) x
), candidates AS (
  SELECT id, next_at, false AS closing FROM open_steps WHERE rank <= cap
  UNION ALL
  SELECT p.id, p.next_at, true
  FROM running r
  CROSS JOIN LATERAL (
    -- through the (campaign_id, status, step) index: only the open rows past the last step are read
    SELECT p.id, p.next_at FROM prospects p
    WHERE p.campaign_id = r.id AND p.status = ANY('{ready,writing,later}'::"ProspectStatus"[]) AND p.step >= r.steps
      AND p.next_at <= now() AND ${UNQUEUED}
    ORDER BY p.next_at LIMIT $2::int
  ) p
), taken AS (
  -- by primary key: a join here let the planner hash the whole table
  SELECT p.id FROM prospects p WHERE p.id = ANY(ARRAY(SELECT id FROM candidates ORDER BY next_at LIMIT $2::int))
  FOR UPDATE OF p SKIP LOCKED
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

// ---- mailbox rotation (rotation.ts) ----

export interface RotationCandidate {
  id: number;
  address: string;
  active: boolean;
  paused: boolean;
  over_bounce: boolean;
}

/**
 * The mailboxes a step of the campaign may go out from: the rotation's (active first, in turn: fewest outreach emails
 * today, then idle longest, then the order given), and the prospect's own (`own`) even when taken out of the rotation.
 * `over_bounce`: over its last `window` ended outreach emails (at least 20), the share of dead bounces passes
 * `bounceRate` (the campaign's pause_on rate); read only when the rotation has a choice to make.
 */
export function rotationCandidates(tx: Tx, campaignId: number, own: number | null, bounceRate: number | null, window: number): Promise<RotationCandidate[]> {
  return rawQuery<RotationCandidate>(
    tx,
    `WITH list AS (
       SELECT cm.mailbox_id AS id, cm.active, cm.position FROM campaign_mailboxes cm WHERE cm.campaign_id = $1
       UNION ALL
       SELECT c.mailbox_id, true, 0 FROM campaigns c WHERE c.id = $1
         AND NOT EXISTS (SELECT 1 FROM campaign_mailboxes cm WHERE cm.campaign_id = c.id AND cm.mailbox_id = c.mailbox_id)
       UNION ALL
       SELECT $2::int, false, 0 WHERE $2::int IS NOT NULL
     ), chosen AS (
       SELECT DISTINCT ON (id) id, active, position FROM list ORDER BY id, active DESC
     ), sized AS (
       SELECT ch.*, count(*) FILTER (WHERE ch.active) OVER () AS size FROM chosen ch
     )
     -- a mailbox that needs reconnecting (OAuth2 consent refused) is passed over like a paused one: its steps wait
     SELECT m.id, m.address, s.active, (m.paused OR m.auth_status = 'needs_reconnect') AS paused,
       CASE WHEN s.size > 1 AND $3::float8 IS NOT NULL AND $2::int IS NULL THEN coalesce((
         SELECT w.ended >= 20 AND w.dead::float8 / w.ended > $3::float8 FROM (
           SELECT count(*)::int AS ended, count(*) FILTER (WHERE x.dead)::int AS dead FROM (
             SELECT ${isDeadBounce('e')} AS dead FROM messages e
             WHERE e.mailbox_id = m.id AND e.kind = 'sequence' AND e.status IN ('sent', 'bounced', 'failed')
             ORDER BY e.created_at DESC LIMIT $4::int) x) w), false)
       ELSE false END AS over_bounce
     FROM sized s JOIN mailboxes m ON m.id = s.id
     ORDER BY s.active DESC,
       CASE WHEN m.sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date THEN m.sequence_count ELSE 0 END,
       m.sequence_last_at NULLS FIRST, s.position, m.id`,
    [campaignId, own, bounceRate, Math.trunc(window)],
  );
}

/** The campaign's rotation becomes these mailboxes, active in this order; any other it had stays, inactive. */
export async function setCampaignMailboxes(tx: Tx, campaignId: number, mailboxes: number[]): Promise<void> {
  await rawQuery(tx, `UPDATE campaign_mailboxes SET active = false WHERE campaign_id = $1 AND NOT (mailbox_id = ANY($2::int[]))`, [campaignId, mailboxes]);
  await rawQuery(
    tx,
    `INSERT INTO campaign_mailboxes (campaign_id, mailbox_id, position, active)
     SELECT $1, m.id, m.position, true FROM unnest($2::int[]) WITH ORDINALITY AS m(id, position)
     ON CONFLICT (campaign_id, mailbox_id) DO UPDATE SET position = excluded.position, active = true`,
    [campaignId, mailboxes],
  );
}

/** The campaign's rotation: its active mailboxes in order, and those taken out that still finish prospects. */
export function campaignMailboxes(tx: Tx, campaignId: number): Promise<{ mailbox_id: number; active: boolean }[]> {
  return rawQuery<{ mailbox_id: number; active: boolean }>(
    tx,
    `SELECT mailbox_id, active FROM campaign_mailboxes WHERE campaign_id = $1 ORDER BY active DESC, position, mailbox_id`,
    [campaignId],
  );
}

/** Sends per mailbox of the campaign: its outreach emails that went out, and the prospects each one started. */
export function mailboxCounts(tx: Tx, campaignId: number): Promise<{ mailbox: number; address: string; sent: number; prospects: number }[]> {
  return rawQuery<{ mailbox: number; address: string; sent: number; prospects: number }>(
    tx,
    `WITH sent AS (
       SELECT m.mailbox_id, count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent
       FROM prospects p JOIN messages m ON m.prospect_id = p.id WHERE p.campaign_id = $1 AND m.kind = 'sequence' GROUP BY m.mailbox_id
     ), started AS (
       SELECT mailbox_id, count(*)::int AS prospects FROM prospects WHERE campaign_id = $1 AND mailbox_id IS NOT NULL GROUP BY mailbox_id
     ), ids AS (
       SELECT mailbox_id FROM campaign_mailboxes WHERE campaign_id = $1
       UNION SELECT mailbox_id FROM campaigns WHERE id = $1
       UNION SELECT mailbox_id FROM sent UNION SELECT mailbox_id FROM started
     )
     SELECT b.id AS mailbox, b.address, coalesce(s.sent, 0) AS sent, coalesce(st.prospects, 0) AS prospects
     FROM ids JOIN mailboxes b ON b.id = ids.mailbox_id LEFT JOIN sent s ON s.mailbox_id = b.id LEFT JOIN started st ON st.mailbox_id = b.id
     ORDER BY b.id`,
    [campaignId],
  );
}

// ---- prospects ----

/** Locks the prospect row (FOR UPDATE); false when there is none. */
export async function lockProspect(tx: Tx, id: number): Promise<boolean> {
  const rows = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM prospects WHERE id = ${id} FOR UPDATE`;
  return rows.length > 0;
}

/** Locks the campaign's prospect at this address (FOR UPDATE) and answers its id; undefined when there is none. */
export async function lockProspectByEmail(tx: Tx, campaignId: number, email: string): Promise<number | undefined> {
  const [row] = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM prospects WHERE campaign_id = ${campaignId} AND email = ${email} FOR UPDATE`;
  return row?.id;
}

export interface LockedProspect {
  id: number;
  campaign_id: number;
  email: string | null;
  site: string | null;
  name: string;
  fields: unknown;
  status: string;
  step: number;
  next_at: Date | null;
  thread_id: string | null;
  held_due: Date | null;
  held_next: Date | null;
  mailbox_id: number | null;
  /** its address is on the account's suppression list (a bounce or a complaint) */
  suppressed: boolean;
  /** a copy of this step cancelled by a pause is left behind (the rewrite replaces it) */
  cancelled_left: boolean;
  /** its place in a branched sequence (branches.ts), and since when */
  node: string | null;
  node_since: Date | null;
  /** the keys of the steps it was sent: none is sent twice, whatever edits come */
  sent_keys: string[];
}

/**
 * Locks the prospect row (FOR UPDATE) and reads what the step writer decides on (steps.ts), with two facts it would
 * otherwise ask for in statements of their own: whether its address is suppressed, and whether a cancelled copy of
 * `step` is in the way.
 */
export async function lockProspectForStep(tx: Tx, prospectId: number, step: number): Promise<LockedProspect | undefined> {
  const [p] = await tx.$queryRaw<LockedProspect[]>`
    SELECT p.id, p.campaign_id, p.email, p.site, p.name, p.fields, p.status, p.step, p.next_at, p.thread_id, p.held_due,
      p.held_next, p.mailbox_id, p.node, p.node_since,
      ARRAY(SELECT m.step_key FROM messages m WHERE m.prospect_id = p.id AND m.step_key IS NOT NULL AND m.status <> 'cancelled') AS sent_keys,
      EXISTS (SELECT 1 FROM suppressions s JOIN campaigns c ON c.account_id = s.account_id
              WHERE c.id = p.campaign_id AND s.email = p.email) AS suppressed,
      EXISTS (SELECT 1 FROM messages m WHERE m.prospect_id = p.id AND m.step = ${step} AND m.status = 'cancelled') AS cancelled_left
    FROM prospects p WHERE p.id = ${prospectId} FOR UPDATE OF p`;
  return p;
}

export interface GuardRow {
  id: number;
  status: string;
  reason: string;
  step: number;
  email: string | null;
  site: string | null;
  account_id: number;
  campaign_status: string;
}

/** Locks the prospect row (FOR UPDATE) and reads it with its campaign's account and status (guard.ts). */
export async function lockProspectForGuard(tx: Tx, prospectId: number): Promise<GuardRow | undefined> {
  const [p] = await tx.$queryRaw<GuardRow[]>`
    SELECT p.id, p.status, p.reason, p.step, p.email, p.site, c.account_id, c.status AS campaign_status
    FROM prospects p JOIN campaigns c ON c.id = p.campaign_id
    WHERE p.id = ${prospectId} FOR UPDATE OF p`;
  return p;
}

/** A rewound prospect's place is the step of the email taken back (null for an email from before branches: by position). */
const BACK_TO_STEP = Prisma.raw(
  `node = (SELECT m.step_key FROM messages m WHERE m.prospect_id = prospects.id AND m.step = prospects.step), node_since = now()`,
);

/** Moves the prospect back one step (its thread forgotten when that is step 0), keeping its status and next_at. */
export async function rewindStep(tx: Tx, prospectId: number): Promise<void> {
  await tx.$executeRaw`
      UPDATE prospects SET step = step - 1, updated_at = now(), ${BACK_TO_STEP}, thread_id = CASE WHEN step - 1 = 0 THEN NULL ELSE thread_id END,
        mailbox_id = CASE WHEN step - 1 = 0 THEN NULL ELSE mailbox_id END
      WHERE id = ${prospectId}`;
}

/** Moves the prospect back one step, due at once (back to ready, its thread forgotten, when that is step 0). */
export async function rewindStepDueNow(tx: Tx, prospectId: number): Promise<void> {
  await tx.$executeRaw`
        UPDATE prospects SET step = step - 1, next_at = now(), updated_at = now(), ${BACK_TO_STEP},
          status = CASE WHEN step - 1 = 0 THEN 'ready'::"ProspectStatus" ELSE status END,
          thread_id = CASE WHEN step - 1 = 0 THEN NULL ELSE thread_id END,
          mailbox_id = CASE WHEN step - 1 = 0 THEN NULL ELSE mailbox_id END
        WHERE id = ${prospectId}`;
}

/** Locks (FOR UPDATE, in id order) the account's prospects at `address` still open or closed only as no_reply. */
export function lockOpenProspectsAt(tx: Tx, accountId: number, address: string): Promise<{ id: number }[]> {
  return tx.$queryRaw<{ id: number }[]>`
    SELECT p.id FROM prospects p JOIN campaigns c ON c.id = p.campaign_id
    WHERE c.account_id = ${accountId} AND p.email = ${address}
      AND (p.status IN ('new', 'ready', 'writing', 'hold', 'later') OR (p.status = 'lost' AND p.reason = 'no_reply'))
    ORDER BY p.id FOR UPDATE OF p`;
}

/** What an add request reads and changes of a prospect. */
export type KnownRow = Pick<Prospect, 'id' | 'campaignId' | 'email' | 'site' | 'name' | 'fields' | 'status' | 'reason' | 'nextAt' | 'closedAt'>;

/** Reads the campaign's prospects at these addresses and at these sites. */
export function prospectsMatching(tx: Tx, campaignId: number, emails: string[], sites: string[]): Promise<KnownRow[]> {
  // One index lookup per address and per site, each in a lateral subquery the planner keeps apart (LIMIT, OFFSET 0).
  // As one `email = ANY(...) OR site = ANY(...)`, or even as two `= ANY` arms, Postgres walked the campaign's every
  // prospect whenever its statistics were older than the campaign's growth (bench: a campaign filled by the requests
  // themselves, estimated at 16 rows, read 800 pages a request of 100, inside the campaign's lock that the other
  // requests queue on).
  const columns = `p.id, p.campaign_id AS "campaignId", p.email, p.site, p.name, p.fields, p.status::text AS status, p.reason, p.next_at AS "nextAt", p.closed_at AS "closedAt"`;
  return tx.$queryRawUnsafe<KnownRow[]>(
      `SELECT ${columns} FROM unnest($2::text[]) AS e(email)
         CROSS JOIN LATERAL (SELECT * FROM prospects WHERE campaign_id = $1 AND email = e.email LIMIT 1) p
       UNION
       SELECT ${columns} FROM unnest($3::text[]) AS t(site)
         CROSS JOIN LATERAL (SELECT * FROM prospects WHERE campaign_id = $1 AND site = t.site OFFSET 0) p`,
    campaignId,
    emails,
    sites,
  );
}

/** Takes `count` ids from the prospects' sequence. */
export async function reserveProspectIds(tx: Tx, count: number): Promise<number[]> {
  const rows = await tx.$queryRaw<{ id: number }[]>`SELECT nextval('prospects_id_seq')::int AS id FROM generate_series(1, ${count})`;
  return rows.map((r) => r.id);
}

/** Inserts the rows in one statement, their columns as arrays; the columns a row does not name take the table's defaults. */
export async function insertProspects(tx: Tx, rows: KnownRow[]): Promise<void> {
  const column = <K extends keyof KnownRow>(key: K) => rows.map((r) => r[key]);
  await tx.$executeRawUnsafe(
      `INSERT INTO prospects (id, campaign_id, email, site, name, fields, status, reason, next_at, closed_at)
       SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::"ProspectStatus"[], $8::text[], $9::timestamptz[], $10::timestamptz[])`,
    column('id'),
    column('campaignId'),
    column('email'),
    column('site'),
    column('name'),
    rows.map((r) => JSON.stringify(r.fields)),
    column('status'),
    column('reason'),
    column('nextAt'),
    column('closedAt'),
  );
}

// ---- campaigns ----

/** Locks the campaign row (FOR UPDATE), whoever's it is. */
export async function lockCampaign(db: Tx, id: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM campaigns WHERE id = ${id} FOR UPDATE`;
}

/** Locks the campaign row (FOR UPDATE) when it is the account's. */
export async function lockAccountCampaign(db: Tx, accountId: number, campaignId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM campaigns WHERE id = ${campaignId} AND account_id = ${accountId} FOR UPDATE`;
}

/** What an add request needs of its campaign. */
export type CampaignForAdds = Pick<Campaign, 'id' | 'accountId' | 'status' | 'stages' | 'schedule'> & { firstDelayHours: number | null };

/** Locks the account's campaign row (FOR UPDATE OF c) and reads what an add request needs, its first step's delay included. */
export async function lockCampaignForAdds(tx: Tx, accountId: number, campaignId: number): Promise<CampaignForAdds | undefined> {
  const [campaign] = await tx.$queryRawUnsafe<CampaignForAdds[]>(
    `SELECT c.id, c.account_id AS "accountId", c.status::text AS status, c.stages, c.schedule,
       (SELECT s.delay_hours FROM campaign_steps s WHERE s.campaign_id = c.id ORDER BY s.position LIMIT 1) AS "firstDelayHours"
     FROM campaigns c WHERE c.id = $1 AND c.account_id = $2 FOR UPDATE OF c`,
    campaignId,
    accountId,
  );
  return campaign;
}

// ---- what counts as a dead bounce and a complaint: the stats and the auto-pause windows ----

/**
 * SQL over a messages row: is it a dead-address bounce? The bounce reader's verdict on it (`messages.bounce`, its reason
 * userunknown, hostunknown, hasmoved or notaccept: docs/inbound.md), from a report or the SMTP answer at delivery; a
 * row bounced before bounces carried their reason counts by its status. The one place that says so.
 */
function isDeadBounce(m: string): string {
  return `COALESCE((${m}.bounce->>'dead')::boolean, ${m}.status = 'bounced')`;
}

/** SQL over a messages row: did its recipient complain about it (an ARF report matched to it: docs/inbound.md)? */
function isComplaint(m: string): string {
  return `EXISTS (SELECT 1 FROM inbound_messages i WHERE i.related_id = ${m}.id AND i.kind = 'complaint')`;
}

// ---- campaign stats (stats.ts) ----

/** Reads how many steps the campaign has; undefined when there is no such campaign. */
export async function campaignStepCount(db: Tx, campaignId: number): Promise<number | undefined> {
  const [campaign] = await rawQuery<{ steps: number }>(
    db,
    `SELECT (SELECT count(*)::int FROM campaign_steps s WHERE s.campaign_id = c.id) AS steps FROM campaigns c WHERE c.id = $1`,
    [campaignId],
  );
  return campaign?.steps;
}

/** Counts the campaign's prospects by status (the statuses it has). */
export function prospectStatusCounts(db: Tx, campaignId: number): Promise<{ status: string; count: number }[]> {
  return rawQuery<{ status: string; count: number }>(
    db,
    `SELECT status::text AS status, count(*)::int AS count FROM prospects WHERE campaign_id = $1 GROUP BY status`,
    [campaignId],
  );
}

export interface StepCounts {
  step: number;
  sent: number;
  bounced: number;
  complained: number;
  ended: number;
  replied: number;
  auto_replied: number;
  unsubscribed: number;
}

/** Counts per step (1 to at least `steps`): the emails sent, dead-bounced, complained of and ended, and the prospects whose last step it was by how they answered. */
export function stepCounts(db: Tx, campaignId: number, steps: number): Promise<StepCounts[]> {
  return rawQuery<StepCounts>(
    db,
    `WITH emails AS (
       SELECT m.step, count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent,
              count(*) FILTER (WHERE ${isDeadBounce('m')})::int AS bounced,
              count(*) FILTER (WHERE ${isComplaint('m')})::int AS complained,
              count(*) FILTER (WHERE m.status IN ('sent', 'bounced', 'failed'))::int AS ended
       FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' GROUP BY m.step
     ), answers AS (
       SELECT p.step, count(*) FILTER (WHERE p.reply IN ('human', 'reported'))::int AS replied,
              count(*) FILTER (WHERE p.reply = 'auto')::int AS auto_replied,
              count(*) FILTER (WHERE p.status = 'lost' AND p.reason = 'unsubscribed')::int AS unsubscribed
       FROM prospects p WHERE p.campaign_id = $1 AND p.step > 0 GROUP BY p.step
     )
     SELECT s.step, coalesce(e.sent, 0) AS sent, coalesce(e.bounced, 0) AS bounced, coalesce(e.complained, 0) AS complained,
            coalesce(e.ended, 0) AS ended, coalesce(a.replied, 0) AS replied, coalesce(a.auto_replied, 0) AS auto_replied,
            coalesce(a.unsubscribed, 0) AS unsubscribed
     FROM generate_series(1, greatest($2::int, (SELECT max(step) FROM emails))) AS s(step)
     LEFT JOIN emails e ON e.step = s.step LEFT JOIN answers a ON a.step = s.step ORDER BY s.step`,
    [campaignId, steps],
  );
}

/** Counts the campaign's prospects written to (past step 0). */
export async function writtenCount(db: Tx, campaignId: number): Promise<number> {
  const written = await rawQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM prospects WHERE campaign_id = $1 AND step > 0`, [campaignId]);
  return written[0]!.n;
}

/** Counts per UTC day, the last `days` up to `now` (oldest first, 0 included): emails sent, replies, dead bounces. */
export function dailyCounts(db: Tx, campaignId: number, now: Date, days: number): Promise<{ date: string; sent: number; replied: number; bounced: number }[]> {
  return rawQuery<{ date: string; sent: number; replied: number; bounced: number }>(
    db,
    `WITH d AS (
       SELECT generate_series(($2::timestamptz AT TIME ZONE 'UTC')::date - ($3::int - 1), ($2::timestamptz AT TIME ZONE 'UTC')::date, interval '1 day')::date AS date
     ), emails AS (
       SELECT (coalesce(m.sent_at, m.updated_at) AT TIME ZONE 'UTC')::date AS date,
              count(*) FILTER (WHERE m.sent_at IS NOT NULL)::int AS sent, count(*) FILTER (WHERE ${isDeadBounce('m')})::int AS bounced
       FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND coalesce(m.sent_at, m.updated_at) >= (SELECT min(date) FROM d)::timestamp AT TIME ZONE 'UTC'
       GROUP BY 1
     ), replies AS (
       SELECT (p.replied_at AT TIME ZONE 'UTC')::date AS date, count(*)::int AS replied FROM prospects p
       WHERE p.campaign_id = $1 AND p.reply IN ('human', 'reported') AND p.replied_at >= (SELECT min(date) FROM d)::timestamp AT TIME ZONE 'UTC'
       GROUP BY 1
     )
     SELECT to_char(d.date, 'YYYY-MM-DD') AS date, coalesce(e.sent, 0) AS sent, coalesce(r.replied, 0) AS replied, coalesce(e.bounced, 0) AS bounced
     FROM d LEFT JOIN emails e ON e.date = d.date LEFT JOIN replies r ON r.date = d.date ORDER BY d.date`,
    [campaignId, now, days],
  );
}

// ---- auto-pause (auto-pause.ts) ----

export interface WindowCounts {
  ended: number;
  dead: number;
  complained: number;
}

/**
 * The windows of `window` ended emails a judgement looks at (auto-pause.ts): `latest`, the last `window` ended; and,
 * among every window the ended emails passed through that holds at least `least` emails, the one with the largest
 * share of dead bounces and the one with the largest share of complaints (null when none holds `least`).
 */
export interface JudgedWindows {
  latest: WindowCounts;
  mostDead: WindowCounts | null;
  mostComplained: WindowCounts | null;
}

/**
 * Counts, in one statement, the windows among `messages` (an SQL FROM ... WHERE naming rows `m`) in the order their
 * emails ended: the window ending at each of the last `window` ended emails (read from the last 2 x window - 1), and the
 * first `least` emails (the first window that can be judged, however many ended together after it).
 */
async function countWindows(tx: Tx, from: string, values: unknown[], window: number, least: number): Promise<JudgedWindows> {
  const w = Math.trunc(window);
  const n = values.length;
  const rows = await rawQuery<WindowCounts & { which: 'latest' | 'dead' | 'complained' }>(
    tx,
    `WITH e AS MATERIALIZED (
       SELECT m.id, m.updated_at, ${isDeadBounce('m')} AS dead, ${isComplaint('m')} AS complained
       ${from} AND m.status IN ('sent', 'bounced', 'failed')
     ),
     tail AS (SELECT * FROM e ORDER BY updated_at DESC, id DESC LIMIT ${2 * w - 1}),
     pos AS (
       SELECT count(*) OVER w AS ended, count(*) FILTER (WHERE dead) OVER w AS dead,
              count(*) FILTER (WHERE complained) OVER w AS complained,
              row_number() OVER (ORDER BY updated_at DESC, id DESC) AS from_end, count(*) OVER () AS held
       FROM tail WINDOW w AS (ORDER BY updated_at, id ROWS BETWEEN ${w - 1} PRECEDING AND CURRENT ROW)
     ),
     judged AS (
       SELECT ended::int, dead::int, complained::int FROM pos WHERE (from_end <= ${w} OR held < ${2 * w - 1}) AND ended >= $${n + 1}
       UNION ALL
       SELECT count(*)::int, (count(*) FILTER (WHERE dead))::int, (count(*) FILTER (WHERE complained))::int
       FROM (SELECT * FROM e ORDER BY updated_at, id LIMIT $${n + 1}) head HAVING count(*) >= $${n + 1}
     )
     (SELECT 'latest' AS which, ended::int, dead::int, complained::int FROM pos WHERE from_end = 1)
     UNION ALL (SELECT 'dead', * FROM judged ORDER BY dead::float8 / ended DESC, ended LIMIT 1)
     UNION ALL (SELECT 'complained', * FROM judged ORDER BY complained::float8 / ended DESC, ended LIMIT 1)`,
    [...values, least],
  );
  const of = (which: string) => {
    const row = rows.find((r) => r.which === which);
    return row ? { ended: row.ended, dead: row.dead, complained: row.complained } : null;
  };
  return { latest: of('latest') ?? { ended: 0, dead: 0, complained: 0 }, mostDead: of('dead'), mostComplained: of('complained') };
}

/** The windows of the campaign's ended sequence emails since `since` (countWindows). */
export function campaignWindows(tx: Tx, campaignId: number, since: Date | null, window: number, least: number): Promise<JudgedWindows> {
  return countWindows(
    tx,
    `FROM prospects p JOIN messages m ON m.prospect_id = p.id
     WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [campaignId, since],
    window,
    least,
  );
}

/** The windows of the broadcast's ended copies since `since` (countWindows). */
export function broadcastWindows(tx: Tx, broadcastId: number, since: Date | null, window: number, least: number): Promise<JudgedWindows> {
  return countWindows(
    tx,
    `FROM messages m WHERE m.broadcast_id = $1 AND m.updated_at >= coalesce($2::timestamptz, '-infinity')`,
    [broadcastId, since],
    window,
    least,
  );
}

/** A campaign's `pause_on` (auto-pause.ts): the rates that pause it, over its last `window` emails. */
export interface PauseRates {
  bounce_rate: number | null;
  complaint_rate: number | null;
  window: number;
}

export interface PausableCampaign {
  id: number;
  account_id: number;
  name: string;
  pause_on: Partial<PauseRates> | null;
  window_since: Date | null;
}

/** Reads a running campaign that has auto-pause rates; undefined otherwise. */
export async function runningCampaignWithPauseOn(tx: Tx, campaignId: number): Promise<PausableCampaign | undefined> {
  const [c] = await rawQuery<PausableCampaign>(
    tx,
    `SELECT id, account_id, name, pause_on, window_since FROM campaigns WHERE id = $1 AND status = 'running' AND pause_on IS NOT NULL`,
    [campaignId],
  );
  return c;
}

/** Whose auto-pause window: a campaign's or a broadcast's. */
export type WindowOwner = { campaign: number } | { broadcast: number };

const ownerColumn = (owner: WindowOwner) => ('campaign' in owner ? { column: 'campaign_id', id: owner.campaign } : { column: 'broadcast_id', id: owner.broadcast });

/** Watches the window: each of its emails that ends judges it again (pause_watches; auto-pause.ts). */
export async function watchWindow(tx: Tx, owner: WindowOwner): Promise<void> {
  const { column, id } = ownerColumn(owner);
  await rawQuery(tx, `INSERT INTO pause_watches (${column}) VALUES ($1) ON CONFLICT (${column}) DO NOTHING`, [id]);
}

/** Stops watching the window (judged for good, paused, or no longer running). */
export async function unwatchWindow(tx: Tx, owner: WindowOwner): Promise<void> {
  const { column, id } = ownerColumn(owner);
  await rawQuery(tx, `DELETE FROM pause_watches WHERE ${column} = $1`, [id]);
}

/** Pauses a running campaign with the service's reason; false when it was no longer running. */
export async function pauseRunningCampaign(tx: Tx, campaignId: number, reason: string): Promise<boolean> {
  const paused = await rawQuery(tx, `UPDATE campaigns SET status = 'paused', paused_reason = $2, updated_at = now() WHERE id = $1 AND status = 'running' RETURNING id`, [campaignId, reason]);
  return paused.length > 0;
}

/** Reads the campaign (through its prospect) or the broadcast an email belongs to; undefined for an unknown email. */
export async function campaignOrBroadcastOf(tx: Tx, messageId: string): Promise<{ campaign_id: number | null; broadcast_id: number | null } | undefined> {
  const [m] = await rawQuery<{ campaign_id: number | null; broadcast_id: number | null }>(
    tx,
    `SELECT p.campaign_id, m.broadcast_id FROM messages m LEFT JOIN prospects p ON p.id = m.prospect_id WHERE m.id = $1::uuid`,
    [messageId],
  );
  return m;
}

// ---- held steps (replan.ts) ----

/** A step's planned time: `nextAt`, held past its `due` time by a window or a mailbox limit when later than it. */
export interface PlannedStep {
  id: number;
  due: Date;
  nextAt: Date;
}

/** Sets the prospects' next_at, and records each hold (held_due, held_next) or clears it when next_at is the due time. */
export async function planSteps(tx: Tx, steps: PlannedStep[]): Promise<void> {
  if (!steps.length) return;
  await rawQuery(
    tx,
    `UPDATE prospects p SET next_at = v.next_at,
       held_due = CASE WHEN v.next_at > v.due THEN v.due END, held_next = CASE WHEN v.next_at > v.due THEN v.next_at END
     FROM unnest($1::int[], $2::timestamptz[], $3::timestamptz[]) AS v(id, due, next_at) WHERE p.id = v.id`,
    [steps.map((s) => s.id), steps.map((s) => s.due), steps.map((s) => s.nextAt)],
  );
}

export interface HeldStep {
  id: number;
  fields: unknown;
  held_due: Date;
  next_at: Date;
  schedule: unknown;
}

/** Which held steps to re-plan: a campaign's, those of the campaigns of a mailbox, or some prospects'. */
export type HeldScope = { campaignId: number } | { mailboxId: number } | { prospectIds: number[] };

/** Locks and reads the steps still held (next_at = held_next) of running campaigns in `scope`, with their schedule. */
export function lockHeldSteps(tx: Tx, scope: HeldScope): Promise<HeldStep[]> {
  const [where, value] =
    'campaignId' in scope
      ? ['c.id = $1', scope.campaignId]
      : 'mailboxId' in scope
        ? ['(p.mailbox_id = $1 OR (p.mailbox_id IS NULL AND (c.mailbox_id = $1 OR EXISTS (SELECT 1 FROM campaign_mailboxes cm WHERE cm.campaign_id = c.id AND cm.mailbox_id = $1))))', scope.mailboxId] : ['p.id = ANY($1::int[])', scope.prospectIds];
  return rawQuery<HeldStep>(
    tx,
    `SELECT p.id, p.fields, p.held_due, p.next_at, c.schedule FROM prospects p JOIN campaigns c ON c.id = p.campaign_id
     WHERE ${where} AND c.status = 'running' AND p.status IN ('ready', 'writing') AND p.held_next IS NOT NULL AND p.next_at = p.held_next
     FOR UPDATE OF p`,
    [value],
  );
}

// ---- branches and A/B variants (branches.ts, experiments/) ----

/**
 * What happened to the prospect from `since` until `until` (the condition's end) that a condition asks about: a person's reply (read, or reported by the
 * caller), an auto-reply, an out-of-office (an auto-reply naming the day its writer is back: inbound/handle.ts), a
 * click of a person (not a scanner) on one of its emails.
 */
export async function conditionFacts(tx: Tx, prospectId: number, since: Date, until: Date): Promise<{ replied: boolean; clicked: boolean; auto_replied: boolean; out_of_office: boolean }> {
  const [facts] = await rawQuery<{ replied: boolean; clicked: boolean; auto_replied: boolean; out_of_office: boolean }>(
    tx,
    `SELECT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'reply' AND i.received_at >= $2 AND i.received_at < $3)
              OR (p.reply IN ('human', 'reported') AND p.replied_at >= $2 AND p.replied_at < $3) AS replied,
            EXISTS (SELECT 1 FROM link_clicks c JOIN messages m ON m.id = c.message_id
                    WHERE m.prospect_id = p.id AND NOT c.scanner AND c.at >= $2 AND c.at < $3) AS clicked,
            EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'auto_reply' AND i.received_at >= $2 AND i.received_at < $3) AS auto_replied,
            EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'auto_reply' AND i.received_at >= $2 AND i.received_at < $3
                    AND i.detail LIKE 'back %') AS out_of_office
     FROM prospects p WHERE p.id = $1`,
    [prospectId, since, until],
  );
  return facts ?? { replied: false, clicked: false, auto_replied: false, out_of_office: false };
}

export interface ArmCounts {
  variant: number;
  /** prospects sent that variant */
  sent: number;
  /** of them, those who replied (a person) after it, and those who clicked one of its links */
  replied: number;
  clicked: number;
  first_at: Date | null;
}

/** Per variant of a campaign step: who got it and who answered it (experiments/winner.ts judges on these). */
export function variantArms(tx: Tx, campaignId: number, key: string): Promise<ArmCounts[]> {
  return rawQuery<ArmCounts>(
    tx,
    `SELECT m.variant, count(*)::int AS sent,
            count(*) FILTER (WHERE p.reply IN ('human', 'reported') AND p.replied_at >= m.created_at)::int AS replied,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM link_clicks c WHERE c.message_id = m.id AND NOT c.scanner))::int AS clicked,
            min(m.created_at) AS first_at
     FROM prospects p JOIN messages m ON m.prospect_id = p.id
     WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.step_key = $2 AND m.variant IS NOT NULL
     GROUP BY m.variant ORDER BY m.variant`,
    [campaignId, key],
  );
}

/** The test of a step found its winner: every later prospect gets that variant. */
export async function chooseVariant(tx: Tx, stepId: number, variant: number): Promise<void> {
  await rawQuery(tx, `UPDATE campaign_steps SET chosen_variant = $2 WHERE id = $1 AND chosen_variant IS NULL`, [stepId, variant]);
}

/** Per step key: the emails written, and the prospects waiting there now (an open prospect's place; "$end" past its path). */
export function nodeCounts(tx: Tx, campaignId: number): Promise<{ key: string; sent: number; waiting: number }[]> {
  return rawQuery<{ key: string; sent: number; waiting: number }>(
    tx,
    `WITH places AS (
       SELECT coalesce(p.node, s.key, '$end') AS key, count(*)::int AS n FROM prospects p
       LEFT JOIN campaign_steps s ON s.campaign_id = p.campaign_id AND s.position = p.step + 1
       WHERE p.campaign_id = $1 AND p.status IN ('ready', 'writing', 'later') GROUP BY 1
     ), sent AS (
       SELECT m.step_key AS key, count(*)::int AS n FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.step_key IS NOT NULL GROUP BY 1
     )
     SELECT coalesce(w.key, e.key) AS key, coalesce(e.n, 0) AS sent, coalesce(w.n, 0) AS waiting
     FROM places w FULL JOIN sent e ON e.key = w.key`,
    [campaignId],
  );
}

/**
 * Before a campaign's steps are replaced: every prospect under way that is placed by position gets the key of its
 * step (or "$end" past the last), so the edit keeps it where it is (branches.ts).
 */
export async function pinProspectPlaces(tx: Tx, campaignId: number): Promise<void> {
  await rawQuery(
    tx,
    `UPDATE prospects p SET node = coalesce(s.key, '$end'), node_since = coalesce(p.node_since, now())
     FROM prospects q LEFT JOIN campaign_steps s ON s.campaign_id = q.campaign_id AND s.position = q.step + 1
     WHERE p.id = q.id AND q.campaign_id = $1 AND q.node IS NULL AND q.step > 0 AND q.status IN ('ready', 'writing', 'later', 'hold')`,
    [campaignId],
  );
}

/**
 * A person's first click on a sequence email decides the condition its prospect waits at, when that condition asks
 * about clicks (branches.ts): the prospect's step comes due now. Answers the prospects moved (none for other emails).
 */
export function clickDueNow(tx: Tx, messageId: string): Promise<{ id: number; step: number; next_at: Date }[]> {
  return rawQuery<{ id: number; step: number; next_at: Date }>(
    tx,
    `UPDATE prospects p SET next_at = now(), held_due = NULL, held_next = NULL
     FROM messages m, campaign_steps s
     WHERE m.id = $1::uuid AND p.id = m.prospect_id AND s.campaign_id = p.campaign_id AND s.key = p.node
       AND s.kind = 'condition' AND s.condition->>'if' IN ('clicked', 'not_clicked')
       AND p.status IN ('ready', 'writing', 'later') AND p.next_at > now()
     RETURNING p.id, p.step, p.next_at`,
    [messageId],
  );
}
