import type { Tx } from '../db';
import { LimitReached } from '../errors';

/** The state of a key's daily limit, as the RateLimit-* headers tell it. */
export interface DailyQuota {
  limit: number;
  used: number;
  /** seconds to the next UTC midnight, when the count starts again */
  resetSeconds: number;
}

/** The UTC day as a DATE value (midnight UTC). */
export function utcDay(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

export function secondsToNextUtcMidnight(now = new Date()): number {
  return Math.max(1, Math.ceil((utcDay(now).getTime() + 86_400_000 - now.getTime()) / 1000));
}

export function rateLimitHeaders(quota: DailyQuota): Record<string, string> {
  return {
    'RateLimit-Limit': String(quota.limit),
    'RateLimit-Remaining': String(Math.max(0, quota.limit - quota.used)),
    'RateLimit-Reset': String(quota.resetSeconds),
  };
}

export async function dailyQuota(db: Tx, key: { id: number; dailyLimit: number }, now = new Date()): Promise<DailyQuota> {
  const usage = await db.keyDailyUsage.findUnique({ where: { apiKeyId_day: { apiKeyId: key.id, day: utcDay(now) } } });
  return { limit: key.dailyLimit, used: usage?.count ?? 0, resetSeconds: secondsToNextUtcMidnight(now) };
}

/**
 * Counts `copies` against the key's limit for today, all or nothing: one conditional upsert, so parallel requests
 * serialise on the usage row and never overshoot. Call in the transaction that writes the messages, so a refusal or
 * a rollback takes the count back with them. Throws 429 with Retry-After (next UTC midnight) when over.
 */
export async function reserveDailyQuota(db: Tx, key: { id: number; dailyLimit: number }, copies: number, now = new Date()): Promise<DailyQuota> {
  const day = utcDay(now);
  const resetSeconds = secondsToNextUtcMidnight(now);
  const rows =
    copies <= key.dailyLimit
      ? await db.$queryRaw<{ count: number }[]>`
          INSERT INTO key_daily_usage (api_key_id, day, count) VALUES (${key.id}, ${day.toISOString().slice(0, 10)}::date, ${copies})
          ON CONFLICT (api_key_id, day) DO UPDATE SET count = key_daily_usage.count + EXCLUDED.count
          WHERE key_daily_usage.count + EXCLUDED.count <= ${key.dailyLimit}
          RETURNING count`
      : [];
  if (!rows.length) {
    const current = await dailyQuota(db, key, now);
    throw new LimitReached(
      `the key's daily limit of ${key.dailyLimit} emails would be passed: ${current.used} sent today, this request has ${copies}`,
      resetSeconds,
      rateLimitHeaders(current),
    );
  }
  return { limit: key.dailyLimit, used: rows[0]!.count, resetSeconds };
}
