import type { CampaignStep } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { queueStepsSoon } from './scheduler';
import { judge } from '../experiments/winner';
import { pickVariant, type Variant, type WinnerRule } from '../experiments/variants';
import { chooseVariant, clickDueNow, conditionFacts, variantArms } from './repository/paths';
import { type LockedProspect } from './repository/prospects';
import { conditionOf, decide, decidedBy, END, successor } from './branches';
import { afterHours } from './timing';

/**
 * The step writer's walk along a prospect's path (branches.ts): from its place, through the conditions decided now and
 * the steps it was already sent, to the email to write now, a time to come back, or the end of its path.
 */
export type Walked =
  | { kind: 'email'; step: CampaignStep; moved: boolean }
  | { kind: 'wait'; node: string; since: Date; until: Date; email: boolean }
  | { kind: 'end'; reason: 'no_reply' | 'step_removed' };

/** Where the prospect is: its node, or by position for one placed before branches (the step after those sent). */
export function placeOf(steps: CampaignStep[], p: Pick<LockedProspect, 'node' | 'step'>): string | null {
  if (p.node !== null) return p.node;
  return steps[p.step]?.key ?? END;
}

const later = (a: Date | null, b: Date): Date => (a && a.getTime() > b.getTime() ? a : b);

export async function walk(tx: Tx, steps: CampaignStep[], p: LockedProspect, now: Date): Promise<Walked> {
  const byKey = new Map(steps.map((s) => [s.key, s]));
  const sent = new Set(p.sent_keys);
  let key = placeOf(steps, p);
  let since = p.node_since ?? now;
  let moved = false;
  let end: Date | null = null;
  // a path has no cycle (graphRefusal), so it ends within as many hops as there are steps
  for (let hop = 0; hop <= steps.length; hop++) {
    if (key === END || key === null) return { kind: 'end', reason: 'no_reply' };
    const step = byKey.get(key);
    if (!step) return { kind: 'end', reason: 'step_removed' };
    const condition = conditionOf(step);
    if (condition) {
      // what happened after the condition's end does not count: decided late (a busy mailbox), it decides as it would
      // have; one reached from another sees at least what that one saw
      const own = afterHours(since, condition.within_hours);
      end = later(end, own);
      const decided = decide(condition, await conditionFacts(tx, p.id, since, end), since, now);
      if ('until' in decided) return { kind: 'wait', node: key, since, until: decided.until, email: false };
      // a condition decided now hands on its start: the next one counts from the same email
      key = decided.to;
      moved = true;
      continue;
    }
    if (sent.has(key)) {
      // never twice: an edit may have put a step it was sent back on its path
      key = successor(steps, key) ?? END;
      moved = true;
      continue;
    }
    // a branch taken now: the step's own wait counts from the decision
    if (moved && step.delayHours > 0) return { kind: 'wait', node: key, since: now, until: afterHours(now, step.delayHours), email: true };
    return { kind: 'email', step, moved };
  }
  return { kind: 'end', reason: 'no_reply' };
}

/** Where the prospect goes after `step` was written: the next email, a condition (waiting for its answer), or the end. */
export function afterWriting(steps: CampaignStep[], step: CampaignStep, now: Date): { node: string; condition: boolean; due: Date | null } {
  const key = successor(steps, step.key);
  const next = key === null ? undefined : steps.find((s) => s.key === key);
  if (!next) return { node: END, condition: false, due: null };
  const condition = conditionOf(next);
  if (condition) return { node: next.key, condition: true, due: afterHours(now, condition.within_hours) };
  return { node: next.key, condition: false, due: afterHours(now, next.delayHours) };
}

/**
 * The variant of an A/B step this prospect gets (0-based), or null for a step without variants: the test's winner once
 * it has one, else by the hash of campaign, step and prospect in the weights. A step with a winner rule is judged here,
 * at each write until it has one (experiments/winner.ts).
 */
export async function variantFor(tx: Tx, step: CampaignStep, prospectId: number, now: Date): Promise<{ index: number; variant: Variant } | null> {
  const variants = step.variants as unknown as Variant[] | null;
  if (!variants?.length) return null;
  let chosen = step.chosenVariant;
  if (chosen === null && step.winner) {
    const rule = step.winner as unknown as WinnerRule;
    const arms = await variantArms(tx, step.campaignId, step.key);
    const counts = variants.map((_, i) => arms.find((a) => a.variant === i));
    const started = arms.reduce<Date | null>((first, a) => (a.first_at && (!first || a.first_at < first) ? a.first_at : first), null);
    const verdict = judge(counts.map((a) => ({ trials: a?.sent ?? 0, successes: (rule.metric === 'clicks' ? a?.clicked : a?.replied) ?? 0 })), rule, started, now);
    if (verdict.winner !== null) {
      chosen = verdict.winner;
      await chooseVariant(tx, step.id, chosen);
    }
  }
  const index = chosen ?? pickVariant(variants.map((v) => v.weight), `${step.campaignId}:${step.key}`, prospectId);
  return { index, variant: variants[index]! };
}

/**
 * An answer read from the inbound path decides the condition the prospect waits at, when it asks about that answer
 * (branches.ts decidedBy): the prospect goes on along its branch at once. Returns the prospect's new place and when its
 * next step is due, or null when it waits at no such condition. A replied prospect is placed on its branch, and gets no
 * further step whichever it is.
 */
export async function answerBranch(tx: Tx, prospect: { campaignId: number; node: string | null }, answer: 'reply' | 'auto_reply' | 'out_of_office', now: Date): Promise<{ node: string; nodeSince: Date; nextAt: Date } | null> {
  if (prospect.node === null || prospect.node === END) return null;
  const steps = await tx.campaignStep.findMany({ where: { campaignId: prospect.campaignId }, orderBy: { position: 'asc' } });
  const at = steps.find((s) => s.key === prospect.node);
  const condition = at ? conditionOf(at) : null;
  if (!condition || !decidedBy(answer).includes(condition.if)) return null;
  const to = condition.if.startsWith('not_') ? condition.else : condition.then;
  const target = steps.find((s) => s.key === to);
  if (!target) return null;
  const next = conditionOf(target);
  return { node: to, nodeSince: now, nextAt: afterHours(now, next ? next.within_hours : target.delayHours) };
}

/** After a person's first click on one of its emails: a prospect waiting at a condition on clicks goes on now. */
export async function clickDecides(db: Db, messageId: string): Promise<void> {
  const moved = await clickDueNow(db, messageId);
  if (moved.length) await queueStepsSoon(moved.map((p) => ({ prospectId: p.id, step: p.step + 1, nextAt: p.next_at })));
}
