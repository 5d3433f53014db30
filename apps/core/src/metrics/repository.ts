import type { Db } from '../db';

/** The SQL of the metrics' Postgres gauges: counts of messages by status, exact (bounded) or estimated. */

/** Reads how many messages have each of `statuses`, counting at most `cap` rows each (an index range per status). */
export async function countStatusesUpTo(db: Db, statuses: readonly string[], cap: number): Promise<{ status: string; n: bigint }[]> {
  return db.$queryRawUnsafe<{ status: string; n: bigint }[]>(
    statuses.map((s) => `SELECT '${s}' AS status, count(*) AS n FROM (SELECT 1 FROM messages WHERE status = '${s}' LIMIT ${cap}) x`).join(' UNION ALL '),
  );
}

/** Counts the messages of each status exactly, reading at most `cap` + 1 rows (more than `cap` in all: the counts are partial). */
export async function countStatusesExactly(db: Db, cap: number): Promise<{ status: string; n: number }[]> {
  return db.$queryRawUnsafe<{ status: string; n: number }[]>(
    `SELECT status::text AS status, count(*)::int AS n FROM (SELECT status FROM messages LIMIT $1) m GROUP BY status ORDER BY status`,
    cap + 1,
  );
}

/**
 * Reads messages by status as Postgres's statistics estimate them (reltuples x most-common-value frequencies): no scan.
 * messages is partitioned (partitions/): autovacuum analyzes each partition, never the parent, so the estimate is the
 * sum over the partitions.
 */
export async function estimateStatuses(db: Db): Promise<{ status: string; n: number }[]> {
  return db.$queryRawUnsafe<{ status: string; n: number }[]>(
    `SELECT v.status, round(sum(greatest(c.reltuples, 0) * v.freq))::float8 AS n
       FROM pg_partition_tree('messages') t JOIN pg_class c ON c.oid = t.relid,
            LATERAL (SELECT unnest(s.most_common_vals::text::text[]) AS status, unnest(s.most_common_freqs) AS freq
                       FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = c.relname AND s.attname = 'status') v
      WHERE t.isleaf
      GROUP BY v.status`,
  );
}

/** Seconds since the oldest `deferred` message was accepted (null when none): one step down the (status, created_at) index. */
export async function oldestDeferredSeconds(db: Db): Promise<number | null> {
  const [row] = await db.$queryRawUnsafe<{ age: number | null }[]>(
    `SELECT extract(epoch FROM now() - (SELECT created_at FROM messages WHERE status = 'deferred' ORDER BY created_at LIMIT 1))::float8 AS age`,
  );
  return row?.age ?? null;
}

/** Each tracking domain's certificate expiry (docs/tracking-domains.md), as seconds since the epoch. */
export async function certificateExpiries(db: Db): Promise<{ name: string; not_after: number }[]> {
  return db.$queryRawUnsafe<{ name: string; not_after: number }[]>(
    `SELECT name, extract(epoch FROM not_after)::float8 AS not_after FROM tracking_domains WHERE not_after IS NOT NULL ORDER BY name`,
  );
}
