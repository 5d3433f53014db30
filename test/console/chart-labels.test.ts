import { lineChart, spreadLabels, type ChartPoint } from '../../apps/api/src/console/charts';

/**
 * The charts' labels never overlap, whatever the numbers: the line names at the right end are pushed apart and kept
 * inside the plot, the axis labels are spaced by their width (test/console/operator.test.ts measures real pages).
 */
describe('chart labels', () => {
  it('pushes end labels apart, in the order of their lines, and keeps them between the bounds', () => {
    const same = spreadLabels([200, 200, 200, 200, 200], 15, 46, 220);
    expect([...same].sort((a, b) => a - b).every((y, i, all) => i === 0 || y - all[i - 1]! >= 15)).toBe(true);
    expect(Math.max(...same)).toBeLessThanOrEqual(220);
    expect(Math.min(...same)).toBeGreaterThanOrEqual(46);
    // lines ending at the bottom (all zero) stay above the axis, in their order
    const bottom = spreadLabels([230, 230, 230], 15, 46, 220);
    expect(bottom).toEqual([190, 205, 220]);
    // labels with room stay where their lines end
    expect(spreadLabels([60, 120, 180], 15, 46, 220)).toEqual([60, 120, 180]);
  });

  it('spaces the axis labels of 90 days, 72 hours or 30 minutes so that none overlaps another', () => {
    for (const [n, label] of [
      [90, (i: number) => `11-${String(i % 30).padStart(2, '0')}`],
      [72, (i: number) => `${String(i % 24).padStart(2, '0')}:00`],
      [30, (i: number) => `20:${String(i).padStart(2, '0')}`],
      [2, (i: number) => `2026-11-2${i}`],
    ] as const) {
      const points: ChartPoint[] = Array.from({ length: n }, (_, i) => ({ at: String(i), label: label(i), values: { a: i, b: n - i } }));
      const svg = lineChart('t', points, [{ key: 'a', label: 'A' }, { key: 'b', label: 'B' }], 'Day');
      const boxes = [...svg.matchAll(/<text class="axis-x" x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)"[^>]*>([^<]*)<\/text>/g)]
        .map((m) => {
          const w = m[4]!.length * 7;
          const x = Number(m[1]);
          const from = m[3] === 'middle' ? x - w / 2 : m[3] === 'end' ? x - w : x;
          if (m[3] === 'start') expect(x).toBeGreaterThanOrEqual(48);
          return { from, to: from + w, text: m[4] };
        });
      expect(boxes.length).toBeGreaterThan(1);
      for (let i = 1; i < boxes.length; i++) expect({ n, gap: boxes[i]!.from - boxes[i - 1]!.to >= 0, at: boxes[i]!.text }).toEqual({ n, gap: true, at: boxes[i]!.text });
      // the last point always has its label, ending at the plot's right edge
      expect(boxes.at(-1)!.text).toBe(label(n - 1));
    }
  });
});
