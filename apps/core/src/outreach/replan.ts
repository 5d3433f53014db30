import type { Tx } from '../db';
import { lockHeldSteps, planSteps, type HeldScope, type PlannedStep } from './repository/held';
import { scheduleOf, windowedAt } from './windows';

/**
 * Held work is planned again when what held it changes (docs/outreach.md): a step that was due but waits for its
 * sending window, or for its mailbox's daily cap or gap, keeps when it was due (`held_due`). A change of the campaign's
 * schedule, of the mailbox's limits or of the prospect's time zone puts it back at that time, or at the next opening of
 * the window as it is now, whichever is later and not before now: a window widened releases it at once, a narrower one
 * moves it on. A step held by a limit that still holds is deferred again by the step writer when it comes up. The
 * schedule task queues the released steps (a job still delayed to the old time is brought forward: scheduler.ts).
 * Returns how many steps moved.
 */
export async function replanHeldSteps(tx: Tx, scope: HeldScope, now = new Date()): Promise<number> {
  const held = await lockHeldSteps(tx, scope);
  const moved: PlannedStep[] = [];
  for (const step of held) {
    const due = step.held_due.getTime() > now.getTime() ? step.held_due : now;
    const nextAt = windowedAt(scheduleOf(step.schedule), step.fields, due);
    if (nextAt.getTime() !== step.next_at.getTime()) moved.push({ id: step.id, due: step.held_due, nextAt });
  }
  await planSteps(tx, moved);
  return moved.length;
}
