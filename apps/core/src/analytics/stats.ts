import type { Db } from '../db';
import { rawQuery } from '../db';
import { BadRequest, NotFound } from '../errors';
import { dbId, Joi, validate } from '../validate';
import { COUNTERS } from './counters';

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

export type DayCounts = { date: string } & Record<(typeof COUNTERS)[number], number>;

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
  const sums = COUNTERS.map((c) => `COALESCE(sum(c.${c}), 0)::int AS ${c}`).join(', ');
  const rows = await rawQuery<DayCounts>(
    db,
    `SELECT to_char(d.day, 'YYYY-MM-DD') AS date, ${sums}
     FROM generate_series($1::date, $2::date, interval '1 day') AS d(day)
     LEFT JOIN daily_counts c ON c.day = d.day::date
       AND ($3::int IS NULL OR c.account_id = $3) AND ($4::int IS NULL OR c.mailbox_id = $4)
       AND ($5::int IS NULL OR c.campaign_id = $5) AND ($6::int IS NULL OR c.broadcast_id = $6)
     GROUP BY d.day ORDER BY d.day`,
    [from, to, query.account ?? null, query.mailbox ?? null, query.campaign ?? null, query.broadcast ?? null],
    'read-stats',
  );
  return { from, to, days: rows };
}

/** Each filter names a row that exists (404 naming it otherwise). */
async function requireKnown(db: Db, query: StatsQuery): Promise<void> {
  if (!query.account && !query.mailbox && !query.campaign && !query.broadcast) return;
  const [row] = await rawQuery<{ account: boolean; mailbox: boolean; campaign: boolean; broadcast: boolean }>(
    db,
    `SELECT ($1::int IS NULL OR EXISTS (SELECT 1 FROM accounts WHERE id = $1)) AS account,
            ($2::int IS NULL OR EXISTS (SELECT 1 FROM mailboxes WHERE id = $2)) AS mailbox,
            ($3::int IS NULL OR EXISTS (SELECT 1 FROM campaigns WHERE id = $3)) AS campaign,
            ($4::int IS NULL OR EXISTS (SELECT 1 FROM broadcasts WHERE id = $4)) AS broadcast`,
    [query.account ?? null, query.mailbox ?? null, query.campaign ?? null, query.broadcast ?? null],
  );
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

/** A broadcast's counters over its whole life (its funnel): one index range of its account's counter rows. */
export async function broadcastTotals(db: Db, accountId: number, broadcastId: number): Promise<Record<(typeof COUNTERS)[number], number>> {
  const sums = COUNTERS.map((c) => `COALESCE(sum(${c}), 0)::int AS ${c}`).join(', ');
  const [row] = await rawQuery<Record<(typeof COUNTERS)[number], number>>(
    db,
    `SELECT ${sums} FROM daily_counts WHERE account_id = $1 AND broadcast_id = $2`,
    [accountId, broadcastId],
  );
  return row!;
}
