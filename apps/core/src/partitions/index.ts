import { config, type PartitionInterval } from '../config';
import type { Db } from '../db';
import { logger } from '../logger';
import { PARTITIONED, boundAt, boundTime, createPartition, detachedLeftovers, dropDetached, dropPartition, listPartitions, partitionStillNeeded, referencesTo, strayRows, type Partition, type PartitionedTable } from './repository';

export { PARTITIONED, boundAt, type PartitionedTable } from './repository';

/**
 * Time partitions (docs/partitions.md): messages, message_attempts and events are partitioned by
 * RANGE of their time-ordered id. Housekeeping keeps partitions made for the current interval (PARTITION_INTERVAL) and
 * the three after it, so a write never finds no partition; the default partition catches what no range holds
 * (strays, reported in /metrics). Retention drops whole partitions past its line instead of deleting their rows.
 */

/** Intervals made ahead of the current one. */
export const AHEAD = 3;

/** The start (UTC) of the interval that holds `ms`: a day, a week from Monday, a month. */
export function intervalStart(ms: number, interval: PartitionInterval): number {
  const d = new Date(ms);
  if (interval === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return interval === 'day' ? day : day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
}

/** The start of the interval after the one that holds `ms`. */
export function nextIntervalStart(ms: number, interval: PartitionInterval): number {
  const start = new Date(intervalStart(ms, interval));
  if (interval === 'month') return Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
  return start.getTime() + (interval === 'day' ? 1 : 7) * 86_400_000;
}

/** A partition's name: the table and the day its range starts (and the time, when it does not start at midnight). */
export function partitionName(table: PartitionedTable, fromMs: number): string {
  const iso = new Date(fromMs).toISOString();
  const day = iso.slice(0, 10).replace(/-/g, '');
  const time = iso.slice(11, 19).replace(/:/g, '');
  return `${table}_p${day}${time === '000000' ? '' : `_${time}`}`;
}

/** The ranges a table still needs so that the current interval and AHEAD more are covered, after what it has. */
export function missingRanges(partitions: Partition[], now: number, interval: PartitionInterval): { from: number; to: number }[] {
  let horizon = intervalStart(now, interval);
  for (let i = 0; i <= AHEAD; i++) horizon = nextIntervalStart(horizon, interval);
  const covered = Math.max(...partitions.filter((p) => p.to).map((p) => boundTime(p.to!)), 0);
  // a gap before the current interval (the service was away) stays the default partition's
  let from = Math.max(covered, intervalStart(now, interval));
  const ranges: { from: number; to: number }[] = [];
  while (from < horizon) {
    const to = nextIntervalStart(from, interval);
    ranges.push({ from, to });
    from = to;
  }
  return ranges;
}

/** Makes the partitions each table lacks (housekeeping's `partitions` task); answers how many were made. */
export async function ensurePartitions(db: Db, now = Date.now(), interval = config().partitionInterval): Promise<number> {
  let made = 0;
  for (const { table } of PARTITIONED) {
    for (const range of missingRanges(await listPartitions(db, table), now, interval)) {
      const name = partitionName(table, range.from);
      try {
        await createPartition(db, table, name, boundAt(table, range.from), boundAt(table, range.to));
        made++;
      } catch (err) {
        // rows of that range in the default partition (strays), or a lock not had in time: the next run tries again
        logger.warn({ table, partition: name, err: (err as Error).message }, 'partitions: could not make a partition; trying again at the next run');
        break;
      }
    }
  }
  if (made) logger.info({ made, interval }, 'partitions: made ahead');
  return made;
}

/**
 * Drops the partitions of `table` wholly before the cutoff (their range ends at or before it) that hold nothing still
 * needed (the table's rule in PARTITIONED). The rows of other tables pointing into a dropped range go with it, as ON
 * DELETE CASCADE would take them; a table pointing at it without CASCADE keeps the partition (its rows are then
 * deleted one by one by retention, which leaves such rows alone). Answers the partitions dropped.
 */
export async function dropOldPartitions(db: Db, table: PartitionedTable, cutoff: Date): Promise<string[]> {
  await dropDetached(db, await detachedLeftovers(db, table));
  const references = await referencesTo(db, table);
  if (references.some((r) => !r.cascade)) return [];
  const dropped: string[] = [];
  for (const partition of await listPartitions(db, table)) {
    if (!partition.to || boundTime(partition.to) > cutoff.getTime()) continue;
    if (await partitionStillNeeded(db, table, partition.name, cutoff)) continue;
    try {
      const { detached, detachMs, dropMs } = await dropPartition(db, table, partition, references);
      logger.info({ table, detached, detachMs: Math.round(detachMs), dropMs: Math.round(dropMs) }, 'partitions: dropped a partition past retention');
      dropped.push(partition.name);
    } catch (err) {
      logger.warn({ table, partition: partition.name, err: (err as Error).message }, 'partitions: could not drop an old partition; trying again at the next run');
    }
  }
  return dropped;
}

export interface PartitionState {
  table: PartitionedTable;
  /** range partitions (the default one not counted) */
  partitions: number;
  /** when the oldest range kept starts, in ms since the epoch; null when none */
  oldestFromMs: number | null;
  /** rows in the default partition, up to STRAY_COUNT_CAP */
  strays: number;
}

/** Strays are counted up to this many rows a table. */
export const STRAY_COUNT_CAP = 10_000;

/** Each partitioned table's partitions, oldest range and strays: /metrics and the console's overview. */
export async function partitionStates(db: Db): Promise<PartitionState[]> {
  return Promise.all(
    PARTITIONED.map(async ({ table }) => {
      const ranges = (await listPartitions(db, table)).filter((p) => p.from);
      const oldest = ranges.length ? Math.min(...ranges.map((p) => boundTime(p.from!))) : null;
      return { table, partitions: ranges.length, oldestFromMs: oldest, strays: await strayRows(db, table, STRAY_COUNT_CAP) };
    }),
  );
}
