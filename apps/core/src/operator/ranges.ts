import { readStats } from '../analytics/stats';
import type { Db } from '../db';
import { BadRequest } from '../errors';
import { Joi, validate } from '../validate';
import { broadcastDeliveredSince, broadcastMinuteRows, countedBefore, hourRows, type BucketFilter } from './repository';

/**
 * The time ranges of the console's charts: the last 24 hours, the last 7 days hour by hour (168h), 7, 30 or 90 days,
 * or from one day to another. A range under three days (and 168h) is drawn hour by hour (from the messages
 * themselves), a longer one day by day (from the daily counters), and a running broadcast minute by minute.
 */
export const RANGES = ['24h', '168h', '7d', '30d', '90d', 'custom'] as const;
export type RangeName = (typeof RANGES)[number];

export interface RangeQuery {
  range?: RangeName;
  from?: string;
  to?: string;
}

const day = () => Joi.string().trim().pattern(/^\d{4}-\d{2}-\d{2}$/).allow('').messages({ 'string.pattern.base': '{#label} must be a day as YYYY-MM-DD (UTC)' });

export const rangeQuery = Joi.object<RangeQuery>({
  range: Joi.string().valid(...RANGES),
  from: day(),
  to: day(),
}).unknown(true);

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Ranges shorter than this are drawn by the hour. */
export const HOURLY_UNDER_MS = 3 * DAY_MS;

export interface ChartRange {
  name: RangeName;
  unit: 'hour' | 'day';
  /** inclusive start, exclusive end */
  from: Date;
  to: Date;
  /** the form's custom days, as asked */
  fromDay: string;
  toDay: string;
  caption: string;
}

const dayOf = (d: Date) => d.toISOString().slice(0, 10);

function calendarDay(value: string, field: string): Date {
  const at = new Date(`${value}T00:00:00Z`);
  if (Number.isNaN(at.getTime()) || dayOf(at) !== value) throw new BadRequest(`${field} must be a real day (YYYY-MM-DD, UTC)`);
  return at;
}

/**
 * The range a chart query asks for (`fallback` when none: 30 days unless the page says otherwise). A custom range needs
 * both days, from not after to.
 */
export function chartRange(input: unknown, now = new Date(), fallback: RangeName = '30d'): ChartRange {
  const q = validate(rangeQuery, input ?? {}) as RangeQuery;
  const name = q.range ?? fallback;
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  if (name === '24h' || name === '168h') {
    const hours = name === '24h' ? 24 : 168;
    const to = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS);
    const from = new Date(to.getTime() - hours * HOUR_MS);
    return { name, unit: 'hour', from, to, fromDay: dayOf(from), toDay: dayOf(now), caption: hours === 24 ? 'The last 24 hours' : 'The last 7 days, hour by hour' };
  }
  if (name === 'custom') {
    if (!q.from || !q.to) throw new BadRequest('a custom range needs from and to (YYYY-MM-DD)');
    const from = calendarDay(q.from, 'from');
    const last = calendarDay(q.to, 'to');
    if (from > last) throw new BadRequest('from must not be after to');
    const to = new Date(last.getTime() + DAY_MS);
    const days = Math.round((to.getTime() - from.getTime()) / DAY_MS);
    if (days > 400) throw new BadRequest(`the range is ${days} days, more than 400`);
    const unit = to.getTime() - from.getTime() < HOURLY_UNDER_MS ? 'hour' : 'day';
    return { name: 'custom', unit, from, to, fromDay: q.from, toDay: q.to, caption: `${q.from} to ${q.to}` };
  }
  const days = Number(name.slice(0, -1));
  const from = new Date(today.getTime() - (days - 1) * DAY_MS);
  return { name, unit: 'day', from, to: new Date(today.getTime() + DAY_MS), fromDay: dayOf(from), toDay: dayOf(today), caption: `The last ${days} days` };
}

/** Under this many days of counters a service has little history: its overview opens on the last 7 days hour by hour. */
export const LITTLE_HISTORY_DAYS = 14;

/**
 * The overview's range when none is asked: the last 7 days hour by hour while the service has counted for fewer than
 * LITTLE_HISTORY_DAYS days (30 days would be mostly empty), else the last 30 days day by day.
 */
export async function overviewRange(db: Db, now = new Date()): Promise<RangeName> {
  return (await countedBefore(db, new Date(now.getTime() - LITTLE_HISTORY_DAYS * DAY_MS))) ? '30d' : '168h';
}

/** One bucket of a chart: its start (ISO), a short label, and its counts. */
export interface Bucket {
  at: string;
  label: string;
  values: Record<string, number>;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The buckets of a range for the filter: hours from the messages, or days from the daily counters. */
export async function readBuckets(db: Db, filter: BucketFilter, range: ChartRange): Promise<Bucket[]> {
  if (range.unit === 'day') {
    const { days } = await readStats(db, { ...filter, from: dayOf(range.from), to: dayOf(new Date(range.to.getTime() - DAY_MS)) });
    return days.map((d) => ({ at: d.date, label: d.date.slice(5), values: { ...d, bounced: d.bounced_dead + d.bounced_other } as unknown as Record<string, number> }));
  }
  const rows = await hourRows(db, range.from, range.to, filter);
  // over more than three days the axis shows only some hours: each then carries its day too
  const days = range.to.getTime() - range.from.getTime() > HOURLY_UNDER_MS;
  return rows.map((r) => {
    const h = r.hour;
    const day = `${pad(h.getUTCMonth() + 1)}-${pad(h.getUTCDate())}`;
    // midnight carries its day, the other hours only their time
    const label = days ? `${day} ${pad(h.getUTCHours())}:00` : h.getUTCHours() === 0 ? day : `${pad(h.getUTCHours())}:00`;
    const { hour: _hour, ...values } = r;
    return { at: h.toISOString().slice(0, 16).replace('T', ' '), label, values: { ...values, bounced: r.bounced_dead + r.bounced_other } };
  });
}

/** A running broadcast's last `minutes` minutes, minute by minute: copies delivered, bounced, failed, first opens. */
export async function broadcastLive(db: Db, broadcast: number, minutes = 30): Promise<Bucket[]> {
  const rows = await broadcastMinuteRows(db, broadcast, minutes);
  return rows.map((r) => ({
    at: r.minute.toISOString().slice(0, 16).replace('T', ' '),
    label: `${pad(r.minute.getUTCHours())}:${pad(r.minute.getUTCMinutes())}`,
    values: { delivered: r.delivered, bounced: r.bounced, failed: r.failed, opened: r.opened },
  }));
}

/**
 * A running broadcast's rate: the copies delivered in the last 60 seconds, counted from the rows themselves (not the
 * minute buckets, whose current minute is partial and whose average runs over minutes before the broadcast began).
 */
export const broadcastLastMinute = (db: Db, broadcast: number): Promise<number> => broadcastDeliveredSince(db, broadcast, 60);
