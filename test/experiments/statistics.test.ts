import { normalCdf, twoProportionTest } from '../../apps/core/src/experiments/statistics';
import { pickVariant, weightsRefusal } from '../../apps/core/src/experiments/variants';
import { judge } from '../../apps/core/src/experiments/winner';

/** The A/B statistics against values computed independently (Python's math.erfc on the same formula). */
describe('the two-proportion z-test', () => {
  it('gives the known z and two-sided p-values', () => {
    expect(normalCdf(1.96)).toBeCloseTo(0.9750021, 6);
    expect(normalCdf(-1.96)).toBeCloseTo(0.0249979, 6);
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    const cases: [number, number, number, number, number, number][] = [
      // successes and trials of a, of b; z; p
      [30, 100, 15, 100, 2.5400025, 0.0110852],
      [12, 100, 10, 100, 0.4519846, 0.6512801],
      [45, 500, 30, 500, 1.8009007, 0.0717185],
    ];
    for (const [x1, n1, x2, n2, z, p] of cases) {
      const test = twoProportionTest({ successes: x1, trials: n1 }, { successes: x2, trials: n2 });
      expect(test.z).toBeCloseTo(z, 5);
      expect(test.p).toBeCloseTo(p, 5);
    }
  });

  it('answers p = 1 for an empty arm or no variation at all', () => {
    expect(twoProportionTest({ successes: 0, trials: 0 }, { successes: 3, trials: 10 }).p).toBe(1);
    expect(twoProportionTest({ successes: 0, trials: 50 }, { successes: 0, trials: 50 }).p).toBe(1);
  });
});

describe('judging a test', () => {
  const rule = { metric: 'replies' as const, after_hours: 24, min_sample: 100 };
  const started = new Date('2026-11-01T00:00:00Z');
  const later = new Date('2026-11-03T00:00:00Z');

  it('picks the best arm when p < 0.05 with the minimum sample in each arm', () => {
    expect(judge([{ successes: 15, trials: 100 }, { successes: 30, trials: 100 }], rule, started, later)).toEqual({ winner: 1, p: expect.closeTo(0.0110852, 5) });
  });

  it('reports no winner: too early, too few in an arm, or no significant difference', () => {
    expect(judge([{ successes: 15, trials: 100 }, { successes: 30, trials: 100 }], rule, started, new Date('2026-11-01T12:00:00Z'))).toMatchObject({ winner: null, why: 'too early' });
    expect(judge([{ successes: 15, trials: 99 }, { successes: 30, trials: 100 }], rule, started, later)).toMatchObject({ winner: null, why: 'too few' });
    expect(judge([{ successes: 30, trials: 500 }, { successes: 45, trials: 500 }], { ...rule, min_sample: 500 }, started, later)).toEqual({ winner: null, p: expect.closeTo(0.0717185, 5), why: 'no significant difference' });
  });

  it('with three arms, the best must beat every other', () => {
    const arms = [{ successes: 30, trials: 100 }, { successes: 15, trials: 100 }, { successes: 26, trials: 100 }];
    expect(judge(arms, rule, started, later)).toMatchObject({ winner: null, why: 'no significant difference' });
    expect(judge([arms[0]!, arms[1]!, { successes: 14, trials: 100 }], rule, started, later)).toMatchObject({ winner: 0 });
  });
});

describe('variant assignment', () => {
  it('is deterministic per test and person, and follows the weights', () => {
    expect(pickVariant([1, 1], 'c1:a', 42)).toBe(pickVariant([1, 1], 'c1:a', 42));
    const counts = [0, 0, 0];
    for (let who = 0; who < 8000; who++) counts[pickVariant([3, 1, 0], 'c7:step', who)]! += 1;
    expect(counts[2]).toBe(0);
    expect(counts[0]! / 8000).toBeGreaterThan(0.72);
    expect(counts[0]! / 8000).toBeLessThan(0.78);
  });

  it('refuses weights that do not sum to a positive number', () => {
    expect(weightsRefusal([0, 0])).toMatch(/sum to a positive number/);
    expect(weightsRefusal([1, -1])).toMatch(/at least 0/);
    expect(weightsRefusal([0, 2])).toBeNull();
  });
});
