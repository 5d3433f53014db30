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

/** The 429 for a send of `copies` that would pass the key's limit for today (nothing was written). */
export async function refuseOverLimit(db: Tx, key: { id: number; dailyLimit: number }, copies: number, now = new Date()): Promise<never> {
  const current = await dailyQuota(db, key, now);
  throw new LimitReached(
    `the key's daily limit of ${key.dailyLimit} emails would be passed: ${current.used} sent today, this request has ${copies}`,
    current.resetSeconds,
    rateLimitHeaders(current),
  );
}
