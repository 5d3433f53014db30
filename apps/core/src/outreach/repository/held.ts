import { rawQuery, type Tx } from '../../db';

/** Steps held past their due time by a sending window or a mailbox's limits, and their re-planning (replan.ts). */

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
