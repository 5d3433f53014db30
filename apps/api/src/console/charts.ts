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

/** A line chart of daily counts, one line per series, the days along the bottom. */
export function dailyChart(title: string, days: DayCounts[], series: ChartSeries[]): string {
  const id = idOf(title);
  const width = 760;
  const height = 260;
  const left = 48;
  const right = 150;
  const top = 40;
  const bottom = 36;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const step = niceStep(Math.max(0, ...days.flatMap((d) => series.map((s) => valueOf(d, s.key)))));
  const top_ = 4 * step;
  const x = (i: number) => left + (days.length <= 1 ? plotW / 2 : (i * plotW) / (days.length - 1));
  const y = (v: number) => top + plotH - (v / top_) * plotH;
  const totals = series.map((s) => days.reduce((sum, d) => sum + valueOf(d, s.key), 0));
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${id}-t ${id}-d" font-family="system-ui, sans-serif" font-size="12">`);
  parts.push(`<title id="${id}-t">${esc(title)}</title>`);
  parts.push(`<desc id="${id}-d">${esc(`${days[0]?.date ?? ''} to ${days.at(-1)?.date ?? ''}: `)}${series.map((s, i) => esc(`${s.label} ${totals[i]}`)).join(', ')}</desc>`);
  parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  // the grid: four steps up the side
  for (let n = 0; n <= 4; n++) {
    const gy = y(n * step).toFixed(1);
    parts.push(`<line x1="${left}" y1="${gy}" x2="${left + plotW}" y2="${gy}" stroke="#d8dde3" stroke-width="1"/>`);
    parts.push(`<text x="${left - 6}" y="${gy}" text-anchor="end" dominant-baseline="middle" fill="#4a525a">${esc(n * step)}</text>`);
  }
  // a date every week, and the last day
  days.forEach((d, i) => {
    if (i % 7 !== 0 && i !== days.length - 1) return;
    if (i !== days.length - 1 && days.length - 1 - i < 4) return;
    parts.push(`<text x="${x(i).toFixed(1)}" y="${height - bottom + 18}" text-anchor="middle" fill="#4a525a">${esc(d.date.slice(5))}</text>`);
  });
  parts.push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#4a525a" stroke-width="1"/>`);
  // the lines, each with its dash and marker, its name and total at its end
  const ends: number[] = [];
  series.forEach((s, n) => {
    const style = STYLES[n % STYLES.length]!;
    const points = days.map((d, i) => `${x(i).toFixed(1)},${y(valueOf(d, s.key)).toFixed(1)}`).join(' ');
    parts.push(`<g class="series" data-series="${esc(s.key)}">`);
    parts.push(`<polyline points="${points}" fill="none" stroke="${style.colour}" stroke-width="2"${style.dash ? ` stroke-dasharray="${style.dash}"` : ''}/>`);
    if (days.length <= 62) days.forEach((d, i) => parts.push(marker(style.marker, x(i), y(valueOf(d, s.key)), style.colour)));
    // end labels pushed apart so they never overlap
    let endY = days.length ? y(valueOf(days.at(-1)!, s.key)) : top + plotH;
    for (const other of ends) if (Math.abs(other - endY) < 14) endY = other + 14;
    ends.push(endY);
    parts.push(`<text x="${left + plotW + 8}" y="${endY.toFixed(1)}" dominant-baseline="middle" fill="${style.colour}">${esc(s.label)}</text>`);
    parts.push(`</g>`);
  });
  // the legend: the same marker and dash as the line, the name and the range's total
  let lx = left;
  series.forEach((s, n) => {
    const style = STYLES[n % STYLES.length]!;
    parts.push(`<line x1="${lx}" y1="16" x2="${lx + 26}" y2="16" stroke="${style.colour}" stroke-width="2"${style.dash ? ` stroke-dasharray="${style.dash}"` : ''}/>`);
    parts.push(marker(style.marker, lx + 13, 16, style.colour));
    const text = `${s.label} ${totals[n]}`;
    parts.push(`<text x="${lx + 32}" y="16" dominant-baseline="middle" fill="#1d232b">${esc(text)}</text>`);
    lx += 44 + text.length * 7;
  });
  parts.push('</svg>');
  return `<figure class="chart-figure">${parts.join('')}<figcaption>${esc(title)}</figcaption>${numbersTable(days, series)}</figure>`;
}

/** The chart's numbers, for a reader who would rather read (or cannot see the picture). */
function numbersTable(days: DayCounts[], series: ChartSeries[]): string {
  const head = `<tr><th>Day</th>${series.map((s) => `<th>${esc(s.label)}</th>`).join('')}</tr>`;
  const rows = days
    .filter((d) => series.some((s) => valueOf(d, s.key) > 0))
    .map((d) => `<tr><td>${esc(d.date)}</td>${series.map((s) => `<td>${valueOf(d, s.key)}</td>`).join('')}</tr>`)
    .join('');
  return `<details><summary>The numbers</summary><table>${head}${rows || `<tr><td colspan="${series.length + 1}">Nothing happened in these days.</td></tr>`}</table></details>`;
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
