/**
 * Sending windows (docs/outreach.md): a campaign's `schedule` {timezone, days, from, to} says when its steps may go
 * out, in local time; a prospect's `fields.timezone` (a valid IANA zone) replaces the campaign's zone for that prospect.
 * Local times come from the platform's Intl time-zone data (daylight-saving changes included): no offsets by hand.
 * Every function takes the moment to judge (`at`): tests move the clock by passing it.
 */
export interface Schedule {
  /** IANA zone, e.g. Europe/Berlin */
  timezone: string;
  /** ISO weekdays, 1 = Monday ... 7 = Sunday */
  days: number[];
  /** "HH:MM" local, inclusive */
  from: string;
  /** "HH:MM" local, exclusive; "24:00" is the end of the day */
  to: string;
}

const formatters = new Map<string, Intl.DateTimeFormat | null>();

/** A cached formatter of the zone, or null when the platform does not know it. */
function formatterOf(zone: string): Intl.DateTimeFormat | null {
  let f = formatters.get(zone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', weekday: 'short', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
    } catch {
      f = null;
    }
    // a bounded cache: zones come from prospects' fields, so a flood of bad names must not grow it for ever
    if (formatters.size < 2000) formatters.set(zone, f);
  }
  return f;
}

/** True for a zone name the platform's time-zone data knows (Europe/Berlin, America/New_York, UTC...). */
export function isTimeZone(zone: unknown): zone is string {
  return typeof zone === 'string' && zone.length > 0 && zone.length <= 64 && formatterOf(zone) !== null;
}

const QUARTER_MS = 15 * 60_000;

/**
 * The zone's offset from UTC (ms) during the quarter-hour of `at`, read from Intl once per zone and quarter: clocks of
 * today's zones change only on quarter-hour boundaries of UTC, and formatToParts costs tens of microseconds a call.
 * Bounded: cleared when it grows past 50,000 entries.
 */
const offsets = new Map<string, number>();

function offsetAt(zone: string, at: number): number {
  const quarter = Math.floor(at / QUARTER_MS);
  const key = `${zone} ${quarter}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const start = quarter * QUARTER_MS;
    const parts = formatterOf(zone)!.formatToParts(new Date(start));
    const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
    const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'));
    offset = wall - Math.floor(start / 60_000) * 60_000;
    if (offsets.size >= 50_000) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/** The local weekday (ISO) and minute of the day at `at` in `zone`. */
export function localTime(zone: string, at: Date): { weekday: number; minute: number } {
  const local = new Date(at.getTime() + offsetAt(zone, at.getTime()));
  return { weekday: local.getUTCDay() || 7, minute: local.getUTCHours() * 60 + local.getUTCMinutes() };
}

export const minuteOfDay = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The zone a prospect is judged in: its own `fields.timezone` when valid, else the campaign's. */
export function zoneFor(schedule: Schedule, fields: unknown): string {
  const own = fields && typeof fields === 'object' && !Array.isArray(fields) ? (fields as Record<string, unknown>).timezone : undefined;
  return isTimeZone(own) ? own : schedule.timezone;
}

/** Is `at` inside the window (in `zone`)? */
export function insideWindow(schedule: Schedule, zone: string, at: Date): boolean {
  const { weekday, minute } = localTime(zone, at);
  return schedule.days.includes(weekday) && minute >= minuteOfDay(schedule.from) && minute < minuteOfDay(schedule.to);
}

const MINUTE_MS = 60_000;

/**
 * The first moment at or after `at` inside the window, to the minute (seconds dropped once `at` is outside). Walks
 * the local clock forward: to the window's opening the same day, else to the next local midnight; at most 8 days and
 * a few steps around daylight-saving changes. Null only for a window that never opens (no days).
 */
export function nextWindowOpen(schedule: Schedule, zone: string, at: Date): Date | null {
  if (!schedule.days.length) return null;
  const from = minuteOfDay(schedule.from);
  const to = minuteOfDay(schedule.to);
  let t = at.getTime();
  for (let i = 0; i < 40; i++) {
    const { weekday, minute } = localTime(zone, new Date(t));
    const today = schedule.days.includes(weekday);
    if (today && minute >= from && minute < to) return new Date(t);
    const base = Math.floor(t / MINUTE_MS) * MINUTE_MS;
    if (today && minute < from) {
      // to today's opening; a clock change in between lands an hour off, which the local time read there corrects
      let next = base + (from - minute) * MINUTE_MS;
      const landed = localTime(zone, new Date(next));
      if (landed.weekday === weekday && landed.minute !== from) next += (from - landed.minute) * MINUTE_MS;
      t = Math.max(next, base + MINUTE_MS);
    } else {
      // to the next local midnight (an hour off across a clock change: the next turn goes on from there)
      t = base + (24 * 60 - minute) * MINUTE_MS;
    }
  }
  return null;
}

/** When a step due at `due` may go out: `due` itself inside the window (or without one), else the next opening. */
export function windowedAt(schedule: Schedule | null, fields: unknown, due: Date): Date {
  if (!schedule) return due;
  return nextWindowOpen(schedule, zoneFor(schedule, fields), due) ?? due;
}

/** A stored `schedule` column as a Schedule, or null. */
export function scheduleOf(stored: unknown): Schedule | null {
  if (!stored || typeof stored !== 'object' || Array.isArray(stored)) return null;
  const s = stored as Schedule;
  return typeof s.timezone === 'string' && Array.isArray(s.days) ? s : null;
}
