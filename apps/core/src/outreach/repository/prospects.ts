import type { Campaign, Prospect } from '../../../../../generated/prisma/client';
import { Prisma, type Tx } from '../../db';

/**
 * Prospects' and campaigns' rows: the locks the step writer, the guard, inbound mail and the add requests take, what
 * they read with them, and the add's one-statement insert.
 */

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
