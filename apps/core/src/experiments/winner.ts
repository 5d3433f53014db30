import { twoProportionTest, type Arm } from './statistics';
import type { WinnerRule } from './variants';

/** p below this, in every pairing of the best arm with another, makes it the winner. */
export const SIGNIFICANCE = 0.05;

export type Verdict =
  | { winner: number; p: number }
  | { winner: null; p: number | null; why: 'too early' | 'too few' | 'no significant difference' };

/**
 * Judges an A/B test: the arm with the best rate wins only when the test has run `after_hours`, every arm
 * has reached `min_sample` people and a two-proportion test against each other arm gives p < 0.05; else "no winner".
 */
export function judge(arms: Arm[], rule: WinnerRule, startedAt: Date | null, now: Date): Verdict {
  if (!startedAt || now.getTime() - startedAt.getTime() < rule.after_hours * 3_600_000) return { winner: null, p: null, why: 'too early' };
  if (arms.length < 2 || arms.some((a) => a.trials < rule.min_sample)) return { winner: null, p: null, why: 'too few' };
  const rate = (a: Arm) => a.successes / a.trials;
  const best = arms.reduce((b, a, i) => (rate(a) > rate(arms[b]!) ? i : b), 0);
  const p = Math.max(...arms.filter((_, i) => i !== best).map((other) => twoProportionTest(arms[best]!, other).p));
  return p < SIGNIFICANCE ? { winner: best, p } : { winner: null, p, why: 'no significant difference' };
}
