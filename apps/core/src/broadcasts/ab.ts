import type { Broadcast } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { BadRequest } from '../errors';
import { pickVariant, unitHash, weightsRefusal, type Variant, type WinnerRule } from '../experiments/variants';
import { judge } from '../experiments/winner';
import { broadcastArms } from './repository';

/**
 * A/B tests of broadcasts (docs/broadcasts.md). With `variants`, each subscriber gets one by a hash of
 * broadcast and subscriber, in the weights. With `test_share` (and `winner`), the run writes only the test share's
 * copies first (a hash of broadcast and subscriber below the share), waits `after_hours`, judges the test, and then
 * writes the rest: the winner, or with "no winner" the variants in their weights.
 */
export interface AbInput {
  variants?: Variant[] | null;
  winner?: WinnerRule | null;
  test_share?: number | null;
}

export interface Verdict {
  winner: number | 'no winner';
  p: number | null;
  why?: string;
}

/** The columns of an A/B test, checked (400 naming why); nothing when none is given. */
export function abColumns(input: AbInput & { subject?: string; html?: string | null; text?: string | null; template?: unknown; track_clicks?: boolean }) {
  if (input.variants === undefined && input.winner === undefined && input.test_share === undefined) return {};
  const variants = input.variants ?? null;
  if (variants) {
    if (input.subject !== undefined || input.html != null || input.text != null || input.template != null) {
      throw new BadRequest('variants: a broadcast with variants gives no subject, html, text or template of its own');
    }
    const refusal = weightsRefusal(variants.map((v) => v.weight));
    if (refusal) throw new BadRequest(`variants: ${refusal}`);
  }
  if (input.winner && !variants) throw new BadRequest('winner: give variants to pick a winner from');
  if (input.winner?.metric === 'clicks' && !input.track_clicks) throw new BadRequest('winner: a winner by clicks needs track_clicks: true');
  if (input.test_share != null && !input.winner) throw new BadRequest('test_share: give a winner rule to judge the test by');
  return { variants: variants as never, winner: (input.winner ?? null) as never, testShare: input.test_share ?? null };
}

type Testable = Pick<Broadcast, 'id' | 'variants' | 'winner' | 'testShare' | 'testSentAt' | 'testVerdict'>;

const variantsOf = (b: Testable) => (b.variants as unknown as Variant[] | null) ?? null;
const verdictOf = (b: Testable) => (b.testVerdict as unknown as Verdict | null) ?? null;

/** Whether the run is in its test phase: a test share whose verdict is not in yet. */
export const testing = (b: Testable): boolean => b.testShare !== null && verdictOf(b) === null;

/** Whether the subscriber is in the test share. */
export const inTestShare = (b: Testable, subscriberId: number): boolean => unitHash(`broadcast:${b.id}:test:${subscriberId}`) < (b.testShare ?? 1);

/** The subscriber's variant (0-based) and its content, or null for a broadcast without variants. */
export function variantOf(b: Testable, subscriberId: number): { index: number; subject: string; html: string } | null {
  const variants = variantsOf(b);
  if (!variants?.length) return null;
  const verdict = verdictOf(b);
  const index = verdict && typeof verdict.winner === 'number' ? verdict.winner : pickVariant(variants.map((v) => v.weight), `broadcast:${b.id}`, subscriberId);
  return { index, subject: variants[index]!.subject, html: variants[index]!.body };
}

/** When the test share's wait is over. */
export function judgedAt(b: Testable): Date | null {
  if (!b.testSentAt) return null;
  return new Date(b.testSentAt.getTime() + (b.winner as unknown as WinnerRule).after_hours * 3_600_000);
}

/** Per variant: its copies and how they were answered, with the test's verdict now (kept once judged). */
export async function broadcastTest(db: Tx, b: Testable, now = new Date()) {
  const variants = variantsOf(b);
  if (!variants) return null;
  const arms = await broadcastArms(db, b.id);
  const rows = variants.map((v, i) => {
    const a = arms.find((x) => x.variant === i);
    return { variant: i, subject: v.subject, weight: v.weight, sent: a?.sent ?? 0, replied: a?.replied ?? 0, clicked: a?.clicked ?? 0 };
  });
  const rule = (b.winner as unknown as WinnerRule | null) ?? null;
  let verdict = verdictOf(b);
  if (!verdict && rule) {
    const judged = judge(rows.map((r) => ({ trials: r.sent, successes: rule.metric === 'clicks' ? r.clicked : r.replied })), rule, b.testSentAt, now);
    verdict = judged.winner === null ? { winner: 'no winner', p: judged.p, why: judged.why } : { winner: judged.winner, p: judged.p };
  }
  return { variants: rows, winner: rule, test_share: b.testShare, test_sent_at: b.testSentAt?.toISOString() ?? null, verdict };
}

/**
 * The run's test phase is over once its copies are written: records when, and answers when to judge. At that time
 * (a later run), the verdict is kept; the rest then goes out by it.
 */
export async function afterTestShare(db: Db, b: Testable, now = new Date()): Promise<Date | null> {
  if (!b.testSentAt) {
    b.testSentAt = now;
    await db.broadcast.update({ where: { id: b.id }, data: { testSentAt: now } });
  }
  const at = judgedAt(b)!;
  if (at.getTime() > now.getTime()) return at;
  const test = await broadcastTest(db, b, now);
  const verdict = test!.verdict!;
  // "too early" cannot be: the wait is over; too few or no significant difference is the verdict kept
  b.testVerdict = verdict as never;
  await db.broadcast.update({ where: { id: b.id }, data: { testVerdict: verdict as never } });
  return null;
}
