import { createHash } from 'node:crypto';

/** A/B variants: which one a person gets, and whether a test has a winner. */
export interface Variant {
  subject: string;
  body: string;
  weight: number;
}

export const WINNER_METRICS = ['replies', 'clicks'] as const;
export type WinnerMetric = (typeof WINNER_METRICS)[number];

export interface WinnerRule {
  metric: WinnerMetric;
  /** judged no earlier than this many hours after the test's first email */
  after_hours: number;
  /** people each arm must have reached */
  min_sample: number;
}

/** A number in [0, 1) fixed by the text: the same person and test always land on the same variant. */
export function unitHash(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 0x1_0000_0000;
}

/** The variant (0-based) for `who` in the test `test`, in proportion to the weights (a weight of 0 is never picked). */
export function pickVariant(weights: number[], test: string, who: string | number): number {
  const total = weights.reduce((sum, w) => sum + w, 0);
  let point = unitHash(`${test}:${who}`) * total;
  for (const [i, w] of weights.entries()) {
    if (point < w) return i;
    point -= w;
  }
  return weights.length - 1;
}

/** Why weights cannot be used, or null: each at least 0, summing to a positive number. */
export function weightsRefusal(weights: number[]): string | null {
  if (weights.some((w) => !Number.isFinite(w) || w < 0)) return 'variant weights must be numbers of at least 0';
  if (!(weights.reduce((sum, w) => sum + w, 0) > 0)) return 'variant weights must sum to a positive number';
  return null;
}
