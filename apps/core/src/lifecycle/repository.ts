import { rawQuery, type Tx } from '../db';
import { stopListed } from '../stop-list/repository';

/**
 * The lifecycle series' SQL, and nothing else writes it: a list's steps, each subscriber's run through them
 * (series_runs: Postgres is the truth, Redis holds nothing of a series), and the per-step counts.
 */

/**
 * Starts the series of the subscribers in `added` (a relation of `id`, `list_id` rows just made active): step 1 is due
 * its delay after now. A list without steps starts nothing; a person who had a run keeps it (the unique subscriber_id),
 * so a series starts once. A CTE of what becoming active entails (subscribers/activate.ts).
 */
export const startSeriesSql = (added: string) => `
  INSERT INTO series_runs (list_id, subscriber_id, next_at)
  SELECT a.list_id, a.id, now() + st.delay_hours * interval '1 hour'
  FROM ${added} a JOIN series_steps st ON st.list_id = a.list_id AND st.position = 1
  ON CONFLICT (subscriber_id) DO NOTHING
  RETURNING 1`;

/** Replaces the list's steps (runs under way keep their place: their next step is the one after the last they got). */
export async function replaceSteps(
  tx: Tx,
  listId: number,
  steps: { subject: string; html: string | null; text: string | null; templateId: number | null; delayHours: number }[],
): Promise<void> {
  await rawQuery(tx, 'DELETE FROM series_steps WHERE list_id = $1', [listId]);
  if (!steps.length) return;
  await rawQuery(
    tx,
    `INSERT INTO series_steps (list_id, position, subject, html, text, template_id, delay_hours)
     SELECT $1, v.position, v.subject, v.html, v.text, v.template_id, v.delay_hours
     FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::int[], $7::float8[]) AS v(position, subject, html, text, template_id, delay_hours)`,
    [
      listId,
      steps.map((_, i) => i + 1),
      steps.map((s) => s.subject),
      steps.map((s) => s.html),
      steps.map((s) => s.text),
      steps.map((s) => s.templateId),
      steps.map((s) => s.delayHours),
    ],
  );
}

export interface StepCounts {
  position: number;
  subject: string;
  html: string | null;
  text: string | null;
  /** the stored template the step is rendered from, when it names one */
  template_id: number | null;
  delay_hours: number;
  /** runs whose next step is this one */
  waiting: number;
  /** runs that got this step */
  sent: number;
  /** runs that ended (unsubscribed, suppressed) before this step */
  ended: number;
}

/**
 * Reads the list's steps with, per step, the runs waiting for it, those that got it and those that ended before it. A
 * run whose person is no longer active counts as ended at once (the series task closes it when its step comes up).
 */
export function stepCounts(tx: Tx, listId: number): Promise<StepCounts[]> {
  return rawQuery<StepCounts>(
    tx,
    `WITH runs AS (
       SELECT r.step, (r.status = 'ended' OR (r.status = 'waiting' AND s.status <> 'active')) AS ended, r.status = 'waiting' AS open
       FROM series_runs r JOIN subscribers s ON s.id = r.subscriber_id WHERE r.list_id = $1
     )
     SELECT st.position, st.subject, st.html, st.text, st.template_id, st.delay_hours,
            count(r.*) FILTER (WHERE r.step = st.position - 1 AND r.open AND NOT r.ended)::int AS waiting,
            count(r.*) FILTER (WHERE r.step >= st.position)::int AS sent,
            count(r.*) FILTER (WHERE r.step < st.position AND r.ended)::int AS ended
     FROM series_steps st LEFT JOIN runs r ON true
     WHERE st.list_id = $1 GROUP BY st.id ORDER BY st.position`,
    [listId],
  );
}

/** A due run as CLAIM_DUE_RUNS reads it: the person, the step to write (null past the last) and the list. */
export interface DueRun {
  id: number;
  list_id: number;
  subscriber_id: number;
  step: number;
  email: string;
  name: string;
  fields: unknown;
  /** active and neither suppressed nor stop-listed in the account */
  reachable: boolean;
  subject: string | null;
  html: string | null;
  text: string | null;
  /** a step naming a stored template is rendered from it (its subject, html in its layout, text) */
  template_id: number | null;
  /** the wait before the step after this one; null when this is the last */
  next_delay_hours: number | null;
  account_id: number;
  mailbox_id: number;
  mailbox_address: string;
  list_key: string;
  list_name: string;
}

/**
 * Claims up to $1 due runs in ONE statement: the waiting rows whose next_at has come, oldest first, locked for the
 * caller's transaction (SKIP LOCKED: a second series task at the same moment takes other rows), read with everything
 * the step's email needs. The caller writes the steps and moves the runs on before its transaction ends.
 */
const CLAIM_DUE_RUNS = `
WITH due AS (
  SELECT r.id FROM series_runs r WHERE r.status = 'waiting' AND r.next_at <= now()
    -- a paused subscriber's step waits for the pause's end (docs/preferences.md)
    AND NOT EXISTS (SELECT 1 FROM subscribers ps WHERE ps.id = r.subscriber_id AND ps.paused_until > now())
  ORDER BY r.next_at LIMIT $1 FOR UPDATE SKIP LOCKED
)
SELECT r.id, r.list_id, r.subscriber_id, r.step, s.email, s.name, s.fields,
       (s.status = 'active'
        AND NOT EXISTS (SELECT 1 FROM suppressions sp WHERE sp.account_id = l.account_id AND sp.email = s.email)
        AND NOT ${stopListed('l.account_id', 's.email')}) AS reachable,
       st.subject, st.html, st.text, st.template_id,
       (SELECT n.delay_hours FROM series_steps n WHERE n.list_id = r.list_id AND n.position = r.step + 2) AS next_delay_hours,
       l.account_id, l.mailbox_id, mb.address AS mailbox_address, l.key AS list_key, l.name AS list_name
FROM due d JOIN series_runs r ON r.id = d.id JOIN subscribers s ON s.id = r.subscriber_id
JOIN lists l ON l.id = r.list_id JOIN mailboxes mb ON mb.id = l.mailbox_id
LEFT JOIN series_steps st ON st.list_id = r.list_id AND st.position = r.step + 1
ORDER BY r.next_at, r.id`;

export function claimDueRuns(tx: Tx, limit: number): Promise<DueRun[]> {
  return rawQuery<DueRun>(tx, CLAIM_DUE_RUNS, [limit]);
}

/**
 * Moves the claimed runs on: the steps written so far, the status, and the next step due `delayHours` after now (the
 * database's clock, the one the claim reads; null when there is no next step).
 */
export async function moveRuns(tx: Tx, moves: { id: number; step: number; status: 'waiting' | 'done' | 'ended'; delayHours: number | null }[]): Promise<void> {
  if (!moves.length) return;
  await rawQuery(
    tx,
    `UPDATE series_runs r SET step = v.step, status = v.status::"SeriesRunStatus",
       next_at = CASE WHEN v.status = 'waiting' THEN now() + v.delay_hours * interval '1 hour' END,
       ended_at = CASE WHEN v.status = 'waiting' THEN NULL ELSE now() END
     FROM unnest($1::int[], $2::int[], $3::text[], $4::float8[]) AS v(id, step, status, delay_hours) WHERE r.id = v.id`,
    [moves.map((m) => m.id), moves.map((m) => m.step), moves.map((m) => m.status), moves.map((m) => m.delayHours)],
  );
}
