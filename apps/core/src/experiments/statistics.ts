/**
 * The two-proportion z-test an A/B test decides by: two arms, each a count of successes (replies or
 * clicks) over the people it went to. Pooled standard error under "no difference"; two-sided p-value.
 */
export interface Arm {
  successes: number;
  trials: number;
}

/** The standard normal distribution function, by erf (Abramowitz and Stegun 7.1.26, error under 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** z and the two-sided p-value of "a and b succeed at the same rate"; p = 1 when either arm is empty or neither varies. */
export function twoProportionTest(a: Arm, b: Arm): { z: number; p: number } {
  if (a.trials <= 0 || b.trials <= 0) return { z: 0, p: 1 };
  const pooled = (a.successes + b.successes) / (a.trials + b.trials);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / a.trials + 1 / b.trials));
  if (se === 0) return { z: 0, p: 1 };
  const z = (a.successes / a.trials - b.successes / b.trials) / se;
  return { z, p: Math.min(1, 2 * (1 - normalCdf(Math.abs(z)))) };
}
