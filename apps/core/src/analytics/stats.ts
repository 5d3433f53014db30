import type { Db } from '../db';
import { BadRequest, NotFound } from '../errors';
import { dbId, Joi, validate } from '../validate';
import { COUNTERS, filterRowsExist, readDailyCounts, type DayCounts } from './repository';

export { broadcastTotals, type DayCounts } from './repository';

/** The longest range GET /admin/api/stats answers, in days (both ends included). */
export const STATS_MAX_DAYS = 400;
/** The range when none is given: the last 30 days, today included. */
export const STATS_DEFAULT_DAYS = 30;

const DAY_MS = 86_400_000;

export interface StatsQuery {
  account?: number;
  mailbox?: number;
  campaign?: number;
  broadcast?: number;
  from?: string;
  to?: string;
}

const day = () => Joi.string().trim().pattern(/^\d{4}-\d{2}-\d{2}$/).messages({ 'string.pattern.base': '{#label} must be a date as YYYY-MM-DD (UTC)' });

export const statsQuery = Joi.object<StatsQuery>({
  account: dbId(),
  mailbox: dbId(),
  campaign: dbId(),
  broadcast: dbId(),
  from: day(),
  to: day(),
});

/** A YYYY-MM-DD that names a real calendar day (no 2026-02-30), as UTC midnight; a 400 naming `field` otherwise. */
function calendarDay(value: string, field: string): Date {
  const parsed = new Date(`${value}T00:00:00Z`);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== value || parsed.getUTCFullYear() < 1970) {
    throw new BadRequest(`${field} must be a real day between 1970-01-01 and 9999-12-31 (YYYY-MM-DD, UTC)`);
  }
  return parsed;
}

/** The range a query asks for: `to` defaults to today (UTC), `from` to the 30 days ending at `to`. */
export function statsRange(query: StatsQuery, now = new Date()): { from: string; to: string } {
  const to = query.to ? calendarDay(query.to, 'to') : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const from = query.from ? calendarDay(query.from, 'from') : new Date(to.getTime() - (STATS_DEFAULT_DAYS - 1) * DAY_MS);
  if (from > to) throw new BadRequest('from must not be after to');
  const days = Math.round((to.getTime() - from.getTime()) / DAY_MS) + 1;
  if (days > STATS_MAX_DAYS) throw new BadRequest(`from: the range from..to is ${days} days, more than ${STATS_MAX_DAYS}`);
  return { from: from.toISOString().slice(0, 10), to: to.toISOString().slice(0, 10) };
}

/**
 * The counters of each day of the range (every day present, zeros where nothing happened), summed over the rows that
 * match the filters: an account, a mailbox, a campaign, a broadcast, or any mix of them. Reads daily_counts only.
 */
export async function readStats(db: Db, input: unknown): Promise<{ from: string; to: string; days: DayCounts[] }> {
  const query = validate(statsQuery, input ?? {});
  const { from, to } = statsRange(query);
  await requireKnown(db, query);
  const rows = await readDailyCounts(db, from, to, query);
  return { from, to, days: rows };
}

/** Each filter names a row that exists (404 naming it otherwise). */
async function requireKnown(db: Db, query: StatsQuery): Promise<void> {
  if (!query.account && !query.mailbox && !query.campaign && !query.broadcast) return;
  const row = await filterRowsExist(db, query);
  for (const field of ['account', 'mailbox', 'campaign', 'broadcast'] as const) {
    if (row && !row[field]) throw new NotFound(`${field} ${query[field]} not found`);
  }
}

/** Totals of a range of days, per counter. */
export function totals(days: DayCounts[]): Record<(typeof COUNTERS)[number], number> {
  const sum = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<(typeof COUNTERS)[number], number>;
  for (const d of days) for (const c of COUNTERS) sum[c] += d[c];
  return sum;
}
