/**
 * The console's one date format: ISO 8601 in UTC with the zone named, and the time from now beside it,
 * `2026-11-29 06:19:02 UTC (3 min ago)`. Every template output passes through `shown` (views.ts, eta's filter), so a
 * Date or an ISO timestamp string reads the same on every page without a template saying so.
 */
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

const UNITS: [number, string][] = [
  [86_400_000 * 365, 'y'],
  [86_400_000 * 30, 'mo'],
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
];

/** How far `at` is from `now` in the largest whole unit: `3 h ago`, `in 2 d`, `just now` under a minute. */
export function relative(at: Date, now: number): string {
  const gap = at.getTime() - now;
  const size = Math.abs(gap);
  const unit = UNITS.find(([ms]) => size >= ms);
  if (!unit) return 'just now';
  const amount = `${Math.floor(size / unit[0])} ${unit[1]}`;
  return gap < 0 ? `${amount} ago` : `in ${amount}`;
}

/** `2026-11-29 06:19:02 UTC (3 min ago)` */
export function when(at: Date, now = Date.now()): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC (${relative(at, now)})`;
}

/** A template value as text: dates in the one format, anything else as String() gives it. */
export function shown(value: unknown): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '' : when(value);
  if (typeof value === 'string' && ISO_INSTANT.test(value)) return when(new Date(value));
  return String(value);
}
