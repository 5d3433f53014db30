import type { Tx } from '../db';
import { judge, type Verdict } from '../experiments/winner';
import type { Variant, WinnerRule } from '../experiments/variants';
import { conditionOf, END, successor } from './branches';
import { nodeCounts, variantArms } from './repository/paths';

/**
 * The sequence as a tree with counts per step (the console draws it) and each A/B test's arms and verdict
 * (docs/outreach.md): part of GET /admin/api/campaigns/:id/stats.
 */
export interface NodeStats {
  id: string;
  type: 'email' | 'condition';
  /** emails written at this step */
  sent: number;
  /** open prospects waiting here now */
  waiting: number;
  /** where it goes: an email its next step (null: its path ends), a condition its two branches */
  next: string | null;
  then?: string;
  else?: string;
  if?: string;
}

export interface VariantStats {
  variant: number;
  subject: string;
  weight: number;
  sent: number;
  replied: number;
  clicked: number;
}

export interface TestStats {
  step: string;
  variants: VariantStats[];
  winner: WinnerRule | null;
  /** the variant chosen (every later prospect gets it), or "no winner" with why */
  verdict: { winner: number; p: number | null } | { winner: 'no winner'; p: number | null; why: string };
}

export async function branchStats(db: Tx, campaignId: number, now = new Date()): Promise<{ nodes: NodeStats[]; ended: number; tests: TestStats[] }> {
  const steps = await db.campaignStep.findMany({ where: { campaignId }, orderBy: { position: 'asc' } });
  const counts = new Map((await nodeCounts(db, campaignId)).map((c) => [c.key, c]));
  const nodes = steps.map((s): NodeStats => {
    const c = conditionOf(s);
    const base = { id: s.key, sent: counts.get(s.key)?.sent ?? 0, waiting: counts.get(s.key)?.waiting ?? 0 };
    return c ? { ...base, type: 'condition', if: c.if, next: null, then: c.then, else: c.else } : { ...base, type: 'email', next: successor(steps, s.key) };
  });
  const tests: TestStats[] = [];
  for (const s of steps) {
    const variants = s.variants as unknown as Variant[] | null;
    if (!variants?.length) continue;
    const arms = await variantArms(db, campaignId, s.key);
    const rows = variants.map((v, i) => {
      const a = arms.find((x) => x.variant === i);
      return { variant: i, subject: v.subject, weight: v.weight, sent: a?.sent ?? 0, replied: a?.replied ?? 0, clicked: a?.clicked ?? 0 };
    });
    const rule = s.winner as unknown as WinnerRule | null;
    let verdict: TestStats['verdict'];
    if (s.chosenVariant !== null) verdict = { winner: s.chosenVariant, p: null };
    else if (!rule) verdict = { winner: 'no winner', p: null, why: 'no winner rule' };
    else {
      const started = arms.reduce<Date | null>((first, a) => (a.first_at && (!first || a.first_at < first) ? a.first_at : first), null);
      const judged: Verdict = judge(rows.map((r) => ({ trials: r.sent, successes: rule.metric === 'clicks' ? r.clicked : r.replied })), rule, started, now);
      verdict = judged.winner === null ? { winner: 'no winner', p: judged.p, why: judged.why } : { winner: judged.winner, p: judged.p };
    }
    tests.push({ step: s.key, variants: rows, winner: rule, verdict });
  }
  return { nodes, ended: counts.get(END)?.waiting ?? 0, tests };
}
