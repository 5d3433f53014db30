import { COUNTERS } from '../../../core/src/analytics/repository';
import type { DayCounts } from '../../../core/src/analytics/stats';

/**
 * The console's pictures (docs/analytics.md): SVG drawn on the server from numbers, with no script and no inline
 * style (the console's CSP allows neither; SVG presentation attributes are not styles). Readable without colour: each
 * line has its own dash pattern and marker shape, repeated in the legend, and its name at its end; each figure comes
 * with a table of its numbers. Every text is escaped here, so a page may put the result in as it is.
 */

export type Counter = (typeof COUNTERS)[number];

export interface ChartSeries {
  key: Counter | 'bounced';
  label: string;
}

export const esc = (text: string | number) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Colours that stay apart for the common colour blindnesses, but each line is told apart without them too. */
const STYLES = [
  { colour: '#1f4e99', dash: '', marker: 'circle' },
  { colour: '#c25400', dash: '7 4', marker: 'square' },
  { colour: '#3a3a3a', dash: '2 3', marker: 'triangle' },
  { colour: '#6a3d9a', dash: '10 3 2 3', marker: 'diamond' },
  { colour: '#1b7f5f', dash: '4 2', marker: 'cross' },
] as const;

function marker(shape: string, x: number, y: number, colour: string): string {
  return shapeOf(shape, x, y, colour).replace(/^<(\w+)/, `<$1 class="marker-${shape}"`);
}

function shapeOf(shape: string, x: number, y: number, colour: string): string {
  const p = (n: number) => n.toFixed(1);
  switch (shape) {
    case 'circle':
      return `<circle cx="${p(x)}" cy="${p(y)}" r="3" fill="${colour}"/>`;
    case 'square':
      return `<rect x="${p(x - 3)}" y="${p(y - 3)}" width="6" height="6" fill="${colour}"/>`;
    case 'triangle':
      return `<path d="M${p(x)} ${p(y - 4)}L${p(x + 4)} ${p(y + 3)}L${p(x - 4)} ${p(y + 3)}Z" fill="${colour}"/>`;
    case 'diamond':
      return `<path d="M${p(x)} ${p(y - 4)}L${p(x + 4)} ${p(y)}L${p(x)} ${p(y + 4)}L${p(x - 4)} ${p(y)}Z" fill="none" stroke="${colour}" stroke-width="1.5"/>`;
    default:
      return `<path d="M${p(x - 3)} ${p(y - 3)}L${p(x + 3)} ${p(y + 3)}M${p(x + 3)} ${p(y - 3)}L${p(x - 3)} ${p(y + 3)}" stroke="${colour}" stroke-width="1.5"/>`;
  }
}

/** The grid's step: four steps reach the largest value, each step a whole 1, 2, 2.5 or 5 times a power of ten. */
function niceStep(max: number): number {
  const raw = Math.max(1, max / 4);
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const f of [1, 2, 2.5, 5, 10]) if (f * power >= raw && Number.isInteger(f * power)) return f * power;
  return 10 * power;
}

const valueOf = (day: DayCounts, key: ChartSeries['key']) => (key === 'bounced' ? day.bounced_dead + day.bounced_other : day[key]);

/** An id for the chart's title and description, from its title (unique on a page whose charts have distinct titles). */
const idOf = (title: string) => `chart-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}`;

/** One point along the bottom of a line chart: its time (ISO), the label under it, and a value per series. */
export interface ChartPoint {
  at: string;
  label: string;
  values: Record<string, number>;
}

export interface LineSeries {
  key: string;
  label: string;
}

/** How wide a label of `text` is drawn at font-size 12 (system-ui): at most 7 px a character, kept on the safe side. */
const textWidth = (text: string) => text.length * 7;

/** A line chart of daily counts, one line per series, the days along the bottom. */
export function dailyChart(title: string, days: DayCounts[], series: ChartSeries[]): string {
  const points = days.map((d) => ({ at: d.date, label: d.date.slice(5), values: Object.fromEntries(series.map((s) => [s.key, valueOf(d, s.key)])) }));
  return lineChart(title, points, series, 'Day');
}

/**
 * The indexes of the points that get a label under the axis: evenly spaced, as many as fit with room between them,
 * the last one always (drawn ending at the plot's right edge), none overlapping another.
 */
function axisLabels(points: ChartPoint[], x: (i: number) => number, right: number): { i: number; x: number; anchor: string }[] {
  if (!points.length) return [];
  const widest = Math.max(...points.map((p) => textWidth(p.label)));
  const spacing = points.length > 1 ? x(1) - x(0) : Infinity;
  const need = Math.max(1, Math.ceil((widest + 12) / spacing));
  const every = [1, 2, 3, 4, 6, 7, 12, 14, 24, 28, 30, 48, 60].find((n) => n >= need) ?? need;
  type Label = { i: number; x: number; anchor: string; from: number; to: number };
  const last = points.length - 1;
  const at = (i: number): Label => {
    const w = textWidth(points[i]!.label);
    // the first starts at the plot's left edge (clear of the numbers up the side), the last ends at its right edge
    if (i === 0 && last > 0) return { i, x: x(0), anchor: 'start', from: x(0), to: x(0) + w };
    if (i === last && last > 0) return { i, x: right, anchor: 'end', from: right - w, to: right };
    return { i, x: x(i), anchor: 'middle', from: x(i) - w / 2, to: x(i) + w / 2 };
  };
  const placed: Label[] = [];
  for (let i = 0; i < last; i += every) {
    const label = at(i);
    if (!placed.length || label.from >= placed.at(-1)!.to + 12) placed.push(label);
  }
  // the last point always has its label: the ones it would run into give way
  const end = at(last);
  while (placed.length && placed.at(-1)!.to + 12 > end.from) placed.pop();
  placed.push(end);
  return placed;
}

/**
 * Where each line's end label goes: next to its line's last value where there is room, otherwise pushed apart (by
 * `gap`) and kept between `min` and `max`, in the order of the values, so no two overlap and none runs into the axis.
 */
export function spreadLabels(wanted: number[], gap: number, min: number, max: number): number[] {
  const order = wanted.map((y, n) => ({ y: Math.min(max, Math.max(min, y)), n })).sort((a, b) => a.y - b.y || a.n - b.n);
  for (let k = 1; k < order.length; k++) order[k]!.y = Math.max(order[k]!.y, order[k - 1]!.y + gap);
  if (order.length && order.at(-1)!.y > max) {
    order.at(-1)!.y = max;
    for (let k = order.length - 2; k >= 0; k--) order[k]!.y = Math.min(order[k]!.y, order[k + 1]!.y - gap);
  }
  const out: number[] = [];
  for (const o of order) out[o.n] = o.y;
  return out;
}

/** A line chart: one line per series, the points along the bottom (days, hours or minutes), `unit` naming them. */
export function lineChart(title: string, points: ChartPoint[], series: LineSeries[], unit: string): string {
  const id = idOf(title);
  const width = 760;
  const left = 48;
  const right = 150;
  const bottom = 36;
  const plotW = width - left - right;
  const totals = series.map((s) => points.reduce((sum, p) => sum + (p.values[s.key] ?? 0), 0));
  // the legend first: its rows decide where the plot starts
  const legend: { n: number; x: number; row: number; text: string }[] = [];
  let lx = left;
  let row = 0;
  series.forEach((s, n) => {
    const text = `${s.label} ${totals[n]}`;
    const w = 32 + textWidth(text) + 12;
    if (lx > left && lx + w > width - 8) {
      row++;
      lx = left;
    }
    legend.push({ n, x: lx, row, text });
    lx += w;
  });
  const top = 40 + row * 20;
  const height = 224 + top;
  const plotH = height - top - bottom;
  const step = niceStep(Math.max(0, ...points.flatMap((p) => series.map((s) => p.values[s.key] ?? 0))));
  const top_ = 4 * step;
  const x = (i: number) => left + (points.length <= 1 ? plotW / 2 : (i * plotW) / (points.length - 1));
  const y = (v: number) => top + plotH - (v / top_) * plotH;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${id}-t ${id}-d" font-family="system-ui, sans-serif" font-size="12">`);
  parts.push(`<title id="${id}-t">${esc(title)}</title>`);
  parts.push(`<desc id="${id}-d">${esc(`${points[0]?.at ?? ''} to ${points.at(-1)?.at ?? ''}: `)}${series.map((s, i) => esc(`${s.label} ${totals[i]}`)).join(', ')}</desc>`);
  parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  // the grid: four steps up the side
  for (let n = 0; n <= 4; n++) {
    const gy = y(n * step).toFixed(1);
    parts.push(`<line x1="${left}" y1="${gy}" x2="${left + plotW}" y2="${gy}" stroke="#d8dde3" stroke-width="1"/>`);
    parts.push(`<text class="axis-y" x="${left - 6}" y="${gy}" text-anchor="end" dominant-baseline="middle" fill="#4a525a">${esc(n * step)}</text>`);
  }
  for (const l of axisLabels(points, x, left + plotW)) {
    parts.push(`<text class="axis-x" x="${l.x.toFixed(1)}" y="${height - bottom + 18}" text-anchor="${l.anchor}" fill="#4a525a">${esc(points[l.i]!.label)}</text>`);
  }
  parts.push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#4a525a" stroke-width="1"/>`);
  // the lines, each with its dash and marker, and its name at its end, the names kept apart
  const ends = spreadLabels(
    series.map((s) => (points.length ? y(points.at(-1)!.values[s.key] ?? 0) : top + plotH)),
    15,
    top + 6,
    top + plotH - 8,
  );
  series.forEach((s, n) => {
    const style = STYLES[n % STYLES.length]!;
    const line = points.map((p, i) => `${x(i).toFixed(1)},${y(p.values[s.key] ?? 0).toFixed(1)}`).join(' ');
    parts.push(`<g class="series" data-series="${esc(s.key)}">`);
    parts.push(`<polyline points="${line}" fill="none" stroke="${style.colour}" stroke-width="2"${style.dash ? ` stroke-dasharray="${style.dash}"` : ''}/>`);
    if (points.length <= 62) points.forEach((p, i) => parts.push(marker(style.marker, x(i), y(p.values[s.key] ?? 0), style.colour)));
    parts.push(`<text class="end" x="${left + plotW + 8}" y="${ends[n]!.toFixed(1)}" dominant-baseline="middle" fill="${style.colour}">${esc(s.label)}</text>`);
    parts.push(`</g>`);
  });
  // the legend: the same marker and dash as the line, the name and the range's total
  for (const l of legend) {
    const style = STYLES[l.n % STYLES.length]!;
    const ly = 16 + l.row * 20;
    parts.push(`<line x1="${l.x}" y1="${ly}" x2="${l.x + 26}" y2="${ly}" stroke="${style.colour}" stroke-width="2"${style.dash ? ` stroke-dasharray="${style.dash}"` : ''}/>`);
    parts.push(marker(style.marker, l.x + 13, ly, style.colour));
    parts.push(`<text class="legend" x="${l.x + 32}" y="${ly}" dominant-baseline="middle" fill="#1d232b">${esc(l.text)}</text>`);
  }
  parts.push('</svg>');
  return `<figure class="chart-figure">${parts.join('')}<figcaption>${esc(title)}</figcaption>${numbersTable(points, series, unit)}</figure>`;
}

/** The chart's numbers, for a reader who would rather read (or cannot see the picture). */
function numbersTable(points: ChartPoint[], series: LineSeries[], unit: string): string {
  const head = `<tr><th>${esc(unit)}</th>${series.map((s) => `<th>${esc(s.label)}</th>`).join('')}</tr>`;
  const rows = points
    .filter((p) => series.some((s) => (p.values[s.key] ?? 0) > 0))
    .map((p) => `<tr><td>${esc(p.at)}</td>${series.map((s) => `<td>${p.values[s.key] ?? 0}</td>`).join('')}</tr>`)
    .join('');
  return `<details><summary>The numbers</summary><table><thead>${head}</thead><tbody>${rows || `<tr><td colspan="${series.length + 1}">Nothing happened in this range.</td></tr>`}</tbody></table></details>`;
}

export interface FunnelStep {
  label: string;
  value: number;
}

/** Horizontal bars, the first step as the whole: each bar says its number and its share of the first. */
export function funnelChart(title: string, steps: FunnelStep[]): string {
  const id = idOf(title);
  const width = 760;
  const rowH = 34;
  const left = 130;
  const barMax = 440;
  const height = steps.length * rowH + 16;
  const whole = Math.max(1, steps[0]?.value ?? 0, ...steps.map((s) => s.value));
  const first = steps[0]?.value ?? 0;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${id}-t ${id}-d" font-family="system-ui, sans-serif" font-size="13">`);
  parts.push(`<title id="${id}-t">${esc(title)}</title>`);
  parts.push(`<desc id="${id}-d">${steps.map((s) => esc(`${s.label} ${s.value}`)).join(', ')}</desc>`);
  parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  steps.forEach((s, i) => {
    const y0 = 8 + i * rowH;
    const w = Math.max(s.value > 0 ? 2 : 0, (s.value / whole) * barMax);
    const share = first > 0 && i > 0 ? ` (${((100 * s.value) / first).toFixed(1)}%)` : '';
    parts.push(`<g class="step" data-step="${esc(s.label)}">`);
    parts.push(`<text x="${left - 10}" y="${y0 + rowH / 2 - 2}" text-anchor="end" dominant-baseline="middle" fill="#1d232b">${esc(s.label)}</text>`);
    parts.push(`<rect x="${left}" y="${y0}" width="${barMax}" height="${rowH - 10}" fill="#eef1f5" stroke="#c9d0d8"/>`);
    parts.push(`<rect x="${left}" y="${y0}" width="${w.toFixed(1)}" height="${rowH - 10}" fill="${i === 0 ? '#1f4e99' : '#5a7fbf'}"/>`);
    parts.push(`<text x="${left + barMax + 10}" y="${y0 + rowH / 2 - 2}" dominant-baseline="middle" fill="#1d232b">${esc(`${s.value}${share}`)}</text>`);
    parts.push('</g>');
  });
  parts.push('</svg>');
  return `<figure class="chart-figure">${parts.join('')}<figcaption>${esc(title)}</figcaption></figure>`;
}
