/**
 * The cap GET /admin/api/mailboxes shows as `effective_daily_limit`: the daily_limit, or during a warm-up
 * min(daily_limit, start + step x whole days since the warm-up was set), at `now`; the slot claims apply the same rule
 * in SQL (outreach/repository/slots.ts effectiveLimitSql).
 */
export function effectiveDailyLimit(m: { dailyLimit: number; warmupStart: number | null; warmupStep: number | null; warmupSince: Date | null }, now = new Date()): number {
  if (m.warmupStart === null || m.warmupSince === null) return m.dailyLimit;
  const days = Math.floor(Math.max(0, now.getTime() - m.warmupSince.getTime()) / 86_400_000);
  return Math.min(m.dailyLimit, m.warmupStart + (m.warmupStep ?? 0) * days);
}
