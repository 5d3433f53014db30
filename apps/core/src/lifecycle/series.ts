import type { Db, Tx } from '../db';
import { listId as listIdHeader, renderCopy } from '../templates/list-copy';
import { enqueueDelivery, storeMessages, type OutgoingEmail } from '../delivery/outbox';
import { newId } from '../ids';
import { logger } from '../logger';
import { checkSources, storedSource, templateIdOf, type StoredSource } from '../templates/service';
import { claimDueRuns, moveRuns, replaceSteps, stepCounts, type DueRun } from './repository';
import type { SeriesStepInput } from './schema';

/**
 * A list's welcome series (docs/lists.md): steps written to each person who became active on the list, step 1 its
 * delay after that moment, each next one its own delay after the step before. The start is written in the transaction
 * that made the person active (subscribers/activate.ts, the one home of that move: lifecycle/repository.ts startSeriesSql);
 * from there the run's row is the truth. The `series` housekeeping task claims due runs, writes their step and moves
 * them on in one transaction, then queues delivery: Redis losing its data loses no step (a written step whose job was
 * lost is queued again by the reconciler; a due run is claimed by the next tick).
 */

export interface SeriesStepView {
  step: number;
  subject: string;
  html: string | null;
  text: string | null;
  /** the id of the stored template the step is rendered from; null when it is written from its own subject and bodies */
  template: number | null;
  delay_hours: number;
  waiting: number;
  sent: number;
  ended: number;
}

/**
 * Replaces the list's steps, in the caller's transaction. Each template named is resolved to the list's account's (400
 * naming the step otherwise: the caller's transaction then stores nothing); each body written with the step must parse.
 */
export async function setSeriesSteps(tx: Tx, list: { id: number; accountId: number }, steps: SeriesStepInput[]): Promise<void> {
  const rows = [];
  for (const [i, s] of steps.entries()) {
    checkSources({ [`steps[${i}].subject`]: s.subject, [`steps[${i}].html`]: s.html, [`steps[${i}].text`]: s.text });
    const templateId = s.template == null ? null : await templateIdOf(tx, list.accountId, s.template, `steps[${i}].template`);
    rows.push({ subject: s.subject ?? '', html: s.html ?? null, text: s.text ?? null, templateId, delayHours: s.delay_hours });
  }
  await replaceSteps(tx, list.id, rows);
}

/** The list's steps, each with how many people wait for it, got it, or left before it. */
export async function seriesOf(tx: Tx, listId: number): Promise<SeriesStepView[]> {
  const rows = await stepCounts(tx, listId);
  return rows.map((r) => ({
    step: r.position,
    subject: r.subject,
    html: r.html,
    text: r.text,
    template: r.template_id,
    delay_hours: r.delay_hours,
    waiting: r.waiting,
    sent: r.sent,
    ended: r.ended,
  }));
}

const BATCH = 200;
const BATCHES_PER_TICK = 5;

/** What one claimed run becomes: its step's email (when one is due) and the run's next state. */
function decide(run: DueRun, templates: Map<number, StoredSource>): { email: OutgoingEmail | null; move: Parameters<typeof moveRuns>[1][number] } {
  if (!run.reachable) return { email: null, move: { id: run.id, step: run.step, status: 'ended', delayHours: null } };
  // the list lost steps since the run was planned: nothing is left for this person
  if (run.subject === null) return { email: null, move: { id: run.id, step: run.step, status: 'done', delayHours: null } };
  const step = run.step + 1;
  const id = newId();
  // rendered as a broadcast copy is (the same renderer and RFC 8058 / RFC 2919 headers; the link is put in on the wire)
  // a step naming a stored template: its sources (html inside its layout) as they are now, as a broadcast's copies take them
  const source = run.template_id === null ? { subject: run.subject, html: run.html, text: run.text } : templates.get(run.template_id)!;
  const copy = renderCopy(source, { id: run.subscriber_id, email: run.email, name: run.name, fields: run.fields }, listIdHeader({ key: run.list_key, name: run.list_name }, run.mailbox_address));
  const email: OutgoingEmail = {
    id,
    accountId: run.account_id,
    mailboxId: run.mailbox_id,
    fromAddress: run.mailbox_address,
    kind: 'series',
    to: run.email,
    subject: copy.subject,
    html: copy.html,
    text: copy.text,
    subscriberId: run.subscriber_id,
    step,
    headers: copy.headers,
  };
  const last = run.next_delay_hours === null;
  return { email, move: { id: run.id, step, status: last ? 'done' : 'waiting', delayHours: run.next_delay_hours } };
}

/**
 * Claims up to `limit` due runs and, in the same transaction, writes their steps and moves them on (a person who
 * left, or was suppressed or stop-listed, ends the run instead). Delivery is queued after the commit; when Redis does
 * not take it the rows stay for the reconciler. Answers how many runs were claimed.
 */
export async function runDueSeriesBatch(db: Db, limit = BATCH): Promise<number> {
  const { claimed, written } = await db.$transaction(
    async (tx) => {
      const runs = await claimDueRuns(tx, limit);
      // each template the due steps name, read once a batch
      const templates = new Map<number, StoredSource>();
      for (const run of runs) {
        if (run.reachable && run.template_id !== null && !templates.has(run.template_id)) templates.set(run.template_id, await storedSource(tx, run.template_id));
      }
      const decided = runs.map((run) => decide(run, templates));
      const emails = decided.flatMap((d) => (d.email ? [d.email] : []));
      const rows = await storeMessages(tx, emails);
      await moveRuns(tx, decided.map((d) => d.move));
      return { claimed: runs.length, written: rows.map((r) => ({ id: r.id as string })) };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
  if (written.length) {
    try {
      await enqueueDelivery(db, written);
    } catch (err) {
      logger.debug({ err: (err as Error).message, messages: written.length }, 'series steps left for the reconciler');
    }
  }
  return claimed;
}

/** The `series` housekeeping task: batch after batch until a claim comes back short (at most BATCHES_PER_TICK). */
export async function runDueSeries(db: Db): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < BATCHES_PER_TICK; batch++) {
    const claimed = await runDueSeriesBatch(db, BATCH);
    total += claimed;
    if (claimed < BATCH) break;
  }
  return total;
}
