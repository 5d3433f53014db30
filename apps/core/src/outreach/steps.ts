import { newId } from '../ids';
import { tracked } from '../analytics/tracking';
import type { Db, Tx } from '../db';
import { Prisma } from '../db';
import { enqueueDelivery, storeMessages } from '../delivery/outbox';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import { updateProspect } from './changes';
import { endSequence } from './end';
import { isStopListed } from '../stop-list/repository';
import { pauseOnOf } from './campaigns';
import { claimStepMailbox } from './rotation';
import { lockProspectForStep } from './repository/prospects';
import { planSteps } from './repository/held';
import { renderSubject, renderTemplate, type TemplateContext } from '../templates/render';
import { followUpSubject } from './render';
import { queueStepsSoon } from './scheduler';
import { afterHours, noReplyWaitHours } from './timing';
import { afterWriting, variantFor, walk } from './paths';
import { optOutHeaders, UNSUBSCRIBE_URL_PLACEHOLDER } from './opt-out';
import { scheduleOf, windowedAt } from './windows';
import { storedSource } from '../templates/service';
import { trackingBase } from '../tracking-domains/links';

/**
 * The step writer: one job = one step of one prospect, decided and written in ONE transaction with the prospect row
 * locked. Re-checks status, campaign and step number, claims a mailbox slot, renders, writes the Message row and moves
 * the prospect on. A second run of the same job (or a second worker) waits for the lock, then finds the step already
 * written and does nothing; the unique (prospect_id, step) of message_steps makes a double write impossible regardless.
 */
export type StepOutcome =
  | { kind: 'written'; messageId: string; next: { step: number; at: Date } }
  | { kind: 'closed' }
  | { kind: 'deferred'; until: Date; why: 'not_due' | 'window' | 'daily_limit' | 'gap' | 'mailboxes' | 'branch' }
  | { kind: 'skipped'; why: string };

async function decideAndWrite(tx: Tx, prospectId: number, step: number): Promise<StepOutcome> {
  const p = await lockProspectForStep(tx, prospectId, step);
  if (!p) return { kind: 'skipped', why: 'prospect gone' };
  // `later` (an out-of-office) resumes here at its next_at: writing the step moves it back to writing
  if (p.status !== 'ready' && p.status !== 'writing' && p.status !== 'later') return { kind: 'skipped', why: `prospect is ${p.status}` };
  if (p.step + 1 !== step) return { kind: 'skipped', why: `prospect is at step ${p.step}` };
  const campaign = await tx.campaign.findUniqueOrThrow({ where: { id: p.campaign_id }, include: { steps: { orderBy: { position: 'asc' } } } });
  if (campaign.status !== 'running') return { kind: 'skipped', why: `campaign is ${campaign.status}` };
  const now = new Date();
  const previous = p.status as ProspectStatus;
  if (!p.next_at) return { kind: 'skipped', why: 'no step is scheduled' };
  if (p.next_at.getTime() > now.getTime()) return { kind: 'deferred', until: p.next_at, why: 'not_due' };

  const steps = campaign.steps;
  // the prospect's place on its path (branches.ts): conditions decided now are passed, a step it was sent is never sent again
  const walked = await walk(tx, steps, p, now);
  if (walked.kind === 'end') {
    // the wait after its path's last step is over without an answer (or the step it waited at was removed)
    await endSequence(tx, campaign, previous, p.id, { status: 'lost', reason: walked.reason }, now);
    return { kind: 'closed' };
  }
  if (walked.kind === 'wait') {
    const nextAt = walked.email ? windowedAt(scheduleOf(campaign.schedule), p.fields, walked.until) : walked.until;
    await updateProspect(tx, campaign, previous, p.id, { node: walked.node, nodeSince: walked.since, nextAt, heldDue: null, heldNext: null });
    return { kind: 'deferred', until: nextAt, why: 'branch' };
  }
  const current = walked.step;
  // a branch taken now is kept, whatever holds the email back below (a window, a mailbox's limits): never decided twice
  if (walked.moved) await tx.prospect.update({ where: { id: p.id }, data: { node: current.key, nodeSince: now } });
  if (!p.email) {
    await updateProspect(tx, campaign, previous, p.id, { status: 'hold', nextAt: null });
    return { kind: 'skipped', why: 'no address to write to' };
  }
  if (await isStopListed(tx, campaign.accountId, { email: p.email, site: p.site })) {
    await endSequence(tx, campaign, previous, p.id, { status: 'lost', reason: 'stopped' }, now);
    return { kind: 'skipped', why: 'address is on the stop list' };
  }
  if (p.suppressed) {
    await endSequence(tx, campaign, previous, p.id, { status: 'lost', reason: 'bounced' }, now);
    return { kind: 'skipped', why: 'address bounced or complained before' };
  }
  // when the step was due: before any hold that still stands (a change of what held it re-plans from there: replan.ts)
  const due = p.held_due && p.held_next?.getTime() === p.next_at.getTime() ? p.held_due : p.next_at;
  // outside its sending window (the prospect's zone, else the campaign's): wait for the next opening, holding no slot
  const schedule = scheduleOf(campaign.schedule);
  const opens = windowedAt(schedule, p.fields, now);
  if (opens.getTime() > now.getTime()) {
    await planSteps(tx, [{ id: p.id, due, nextAt: opens }]);
    return { kind: 'deferred', until: opens, why: 'window' };
  }
  // the prospect's own mailbox (its first step's), or for a first step the rotation's next with a free slot (rotation.ts)
  const pauseOn = pauseOnOf(campaign.pauseOn);
  const slot = await claimStepMailbox(tx, { id: campaign.id, mailboxId: campaign.mailboxId, bounceRate: pauseOn?.bounce_rate ?? null, window: pauseOn?.window ?? 100 }, p.mailbox_id);
  if (!slot.claimed) {
    await planSteps(tx, [{ id: p.id, due, nextAt: slot.until }]);
    return { kind: 'deferred', until: slot.until, why: slot.why };
  }

  // the opt-out link is put in on the way to the wire (delivery/compose.ts): the stored body holds the placeholder
  const unsubscribe = campaign.unsubscribe ? UNSUBSCRIBE_URL_PLACEHOLDER : undefined;
  const ctx: TemplateContext = { name: p.name, email: p.email, site: p.site, fields: p.fields, unsubscribe_url: unsubscribe };
  // a step built on a stored template takes its subject, text and html (inside its layout) from it, as they are now
  const source = async (s: (typeof steps)[number]) => (s.templateId === null ? { subject: s.subject, html: null, text: s.body } : storedSource(tx, s.templateId));
  const picked = await variantFor(tx, current, p.id, now);
  const own = picked ? { subject: picked.variant.subject, html: null, text: picked.variant.body } : await source(current);
  const firstSubject = step === 1 ? own.subject : (await source(steps[0]!)).subject;
  const subject = step === 1 ? renderSubject(own.subject, ctx) : followUpSubject(own.subject, firstSubject, ctx);
  // a step cancelled by a pause left its row behind: it was never sent, so it gives way to the rewrite
  if (p.cancelled_left) await tx.message.deleteMany({ where: { prospectId: p.id, step, status: 'cancelled' } });
  const id = newId();
  // links are tracked in the template, before the prospect's fields are merged: a merged field never becomes a tracked link
  // at the account's tracking domain while its certificate is live, else PUBLIC_URL (docs/tracking-domains.md)
  const base = campaign.trackClicks ? await trackingBase(tx, campaign.accountId) : undefined;
  const template = tracked({ html: own.html, text: own.text }, id, { clicks: campaign.trackClicks, opens: false, base });
  const text = template.text === null ? null : renderTemplate(template.text, ctx);
  const html = template.html === null ? null : renderTemplate(template.html, ctx, 'html');
  const [row] = await storeMessages(tx, [
    {
      id,
      accountId: campaign.accountId,
      mailboxId: slot.mailboxId,
      fromAddress: slot.address,
      kind: 'sequence',
      to: p.email,
      subject,
      text,
      html,
      prospectId: p.id,
      step,
      stepKey: current.key,
      variant: picked?.index,
      inReplyTo: step > 1 && p.thread_id ? p.thread_id : undefined,
      references: step > 1 && p.thread_id ? p.thread_id : undefined,
      // the mailbox slot this step took: a record of the spacing, and never later than now, so it holds nothing up
      notBefore: slot.at,
      headers: unsubscribe ? optOutHeaders() : undefined,
    },
  ]);
  const following = afterWriting(steps, current, now);
  // the next email is put at its window's opening now, so the scheduler never claims it while the window is shut; a
  // condition comes due when it is decided without an answer, the end of the path after the no-reply wait
  const nextDue = following.due ?? afterHours(now, noReplyWaitHours(current.delayHours));
  const nextAt = following.due && !following.condition ? windowedAt(schedule, p.fields, nextDue) : nextDue;
  const held = nextAt.getTime() > nextDue.getTime();
  await updateProspect(tx, campaign, previous, p.id, {
    status: 'writing',
    step,
    node: following.node,
    nodeSince: now,
    nextAt,
    heldDue: held ? nextDue : null,
    heldNext: held ? nextAt : null,
    threadId: step === 1 ? row!.messageIdHeader : undefined,
    // the column itself, not a nested connect (for which Prisma reads the mailbox first, to refuse a missing one)
    mailboxId: p.mailbox_id === slot.mailboxId ? undefined : slot.mailboxId,
  });
  return { kind: 'written', messageId: row!.id as string, next: { step: step + 1, at: nextAt } };
}

/** Queues the delivery of a step already written whose queueing was lost (Redis down right after the commit). */
async function requeueWritten(db: Db, prospectId: number, step: number): Promise<void> {
  const message = await db.message.findFirst({ where: { prospectId, step } });
  if (message && message.status === 'queued' && !message.enqueuedAt) await enqueueDelivery(db, [message]);
}

/** `beforeCommit` is a seam for tests that kill a worker mid-step (after the write, before the commit). */
export async function runSequenceStep(db: Db, prospectId: number, step: number, options: { beforeCommit?: (outcome: StepOutcome) => Promise<void> } = {}): Promise<StepOutcome> {
  let outcome: StepOutcome;
  try {
    outcome = await db.$transaction(
      async (tx) => {
        const decided = await decideAndWrite(tx, prospectId, step);
        await options.beforeCommit?.(decided);
        return decided;
      },
      { timeout: 20_000, maxWait: 15_000 },
    );
  } catch (err) {
    // the unique (prospect_id, step) of message_steps: another writer got there first
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return { kind: 'skipped', why: 'step already written' };
    throw err;
  }
  if (outcome.kind === 'written') {
    await enqueueDelivery(db, [{ id: outcome.messageId }]);
    await queueStepsSoon([{ prospectId, step: outcome.next.step, nextAt: outcome.next.at }]);
  } else if (outcome.kind === 'skipped') {
    await requeueWritten(db, prospectId, step);
  }
  return outcome;
}
