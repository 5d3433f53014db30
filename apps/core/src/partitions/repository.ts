import { poolTransaction, rawQuery, type Db } from '../db';
import { OPEN_STATUSES_SQL } from '../message-status';
import { idFloor, idTime } from '../ids';

/**
 * The SQL of time partitions (docs/partitions.md): the tables partitioned by RANGE of a time-ordered id, their
 * partitions as the catalog lists them, and the statements that make and drop them. Table and partition names are ours
 * (PARTITIONED and names made from dates), never a caller's text; bounds are made by boundAt.
 */

/**
 * Each partitioned table, the column its ranges are on, what in a partition is still needed past the cutoff ($1), and
 * the storage options each new partition is made with (`with`).
 */
export const PARTITIONED = [
  // an email not finished, or finished after the cutoff (MESSAGE_ROWS_DAYS), keeps its partition; read from the
  // indexes on (status, created_at) and the BRIN on updated_at, not the partition's rows
  { table: 'messages', key: 'id', needed: `status IN ${OPEN_STATUSES_SQL} OR updated_at >= $1` },
  // partitioned by their message's id, on the same bounds as messages
  { table: 'message_attempts', key: 'message_id', needed: 'at >= $1' },
  // an event not yet fanned out keeps its partition (retention's rule for events)
  { table: 'events', key: 'id', needed: 'dispatched_at IS NULL OR created_at >= $1' },
  // an email's clicks and opens, by its id on the same bounds as messages (RETENTION_DAYS, as their row rules)
  { table: 'link_clicks', key: 'message_id', needed: 'at >= $1' },
  { table: 'message_opens', key: 'message_id', needed: 'last_at >= $1' },
  // the MX's messages: a held one waits for a person (docs/mx.md); a raw of up to about 8 KB stays in its row
  // (migration 20261204010000_mx_raw_inline)
  { table: 'mx_messages', key: 'id', needed: `status = 'held' OR received_at >= $1`, with: 'toast_tuple_target = 8160' },
  // inbound emails read over IMAP, by their bigint ids of milliseconds (inbound_id(): docs/partitions.md)
  { table: 'inbound_messages', key: 'id', needed: 'received_at >= $1', bound: 'ms' },
] as const;

export type PartitionedTable = (typeof PARTITIONED)[number]['table'];

/**
 * The bound of a table's partitions at an instant: the smallest UUIDv7 of it (ids/idFloor), or, for a table of bigint
 * ids (`bound: 'ms'`, inbound_id()), its Unix milliseconds times 1,000.
 */
export function boundAt(table: PartitionedTable, ms: number): string {
  const rule = PARTITIONED.find((p) => p.table === table)!;
  return 'bound' in rule ? String(Math.max(0, Math.floor(ms)) * 1000) : idFloor(ms);
}

/** The instant of a bound (boundAt's inverse). */
export function boundTime(bound: string): number {
  return /^[0-9]+$/.test(bound) ? Math.floor(Number(bound) / 1000) : idTime(bound);
}

export interface Partition {
  name: string;
  /** the range [from, to) of ids; null for the default partition */
  from: string | null;
  to: string | null;
}

const BOUND = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9]{1,18})$/;
const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function checked(name: string): string {
  if (!NAME.test(name)) throw new Error(`not a partition name: ${name}`);
  return name;
}

/** The partitions of a table, the default one included, with their ranges (pg_get_expr of the bound). */
export async function listPartitions(db: Db, table: PartitionedTable): Promise<Partition[]> {
  const rows = await rawQuery<{ name: string; bound: string }>(
    db,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
    [table],
  );
  return rows.map((r) => {
    const range = /FROM \('([0-9a-f-]{36}|[0-9]+)'\) TO \('([0-9a-f-]{36}|[0-9]+)'\)/.exec(r.bound);
    return { name: r.name, from: range ? range[1]! : null, to: range ? range[2]! : null };
  });
}

/**
 * Makes the partition [from, to) of the table. Postgres scans the default partition to check that none of its rows
 * belongs in the new range (they would be strays: the statement then fails, and the partition is not made).
 */
export async function createPartition(db: Db, table: PartitionedTable, name: string, from: string, to: string): Promise<void> {
  if (!BOUND.test(from) || !BOUND.test(to)) throw new Error('a partition bound is an id');
  const rule = PARTITIONED.find((p) => p.table === table)!;
  const storage = 'with' in rule ? ` WITH (${rule.with})` : '';
  await poolTransaction(db, async (query) => {
    // it locks the table for a moment: a long wait for a lock would hold every insert queued behind it
    await query(`SET LOCAL lock_timeout = '5s'`, []);
    await query(`CREATE TABLE IF NOT EXISTS ${checked(name)} PARTITION OF ${table} FOR VALUES FROM ('${from}') TO ('${to}')${storage}`, []);
  });
}

/** Rows in a table's default partition (strays: ids no range holds), counted up to `cap`. */
export async function strayRows(db: Db, table: PartitionedTable, cap: number): Promise<number> {
  const [row] = await rawQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${checked(`${table}_default`)} LIMIT ${Math.floor(cap)}) x`);
  return row?.n ?? 0;
}

/**
 * Whether the partition holds a row still needed past the cutoff (the table's `needed` rule). Its BRIN indexes are
 * summarized first (the ranges autovacuum has not yet summarized: none, on a partition a month old), so that a BRIN
 * the rule reads answers from its summaries.
 */
export async function partitionStillNeeded(db: Db, table: PartitionedTable, partition: string, cutoff: Date): Promise<boolean> {
  const rule = PARTITIONED.find((p) => p.table === table)!;
  await rawQuery(
    db,
    `SELECT brin_summarize_new_values(x.indexrelid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
      WHERE x.indrelid = $1::regclass AND am.amname = 'brin'`,
    [checked(partition)],
  );
  const [row] = await rawQuery<{ needed: boolean }>(db, `SELECT EXISTS (SELECT 1 FROM ${checked(partition)} WHERE ${rule.needed}) AS needed`, [cutoff]);
  return row!.needed;
}

/**
 * The tables that point at the table, from the catalog (so a table another feature adds is covered): each referencing
 * table and column, and whether its rows go with the row they point at. Foreign keys (with ON DELETE CASCADE or not),
 * and, for messages, the tables whose trigger `message_reference` keeps their message_id (their rows go with the
 * message: its trigger `messages_references_delete`).
 */
export async function referencesTo(db: Db, table: PartitionedTable): Promise<Reference[]> {
  return rawQuery<Reference>(
    db,
    `SELECT c.conrelid::regclass::text AS rel, a.attname AS column, c.confdeltype = 'c' AS cascade
       FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f' AND c.confrelid = $1::regclass AND c.conparentid = 0 AND array_length(c.conkey, 1) = 1
     UNION ALL
     SELECT t.tgrelid::regclass::text, 'message_id', true FROM pg_trigger t
      WHERE $1::text = 'messages' AND t.tgfoid = 'message_reference'::regproc AND t.tgparentid = 0`,
    [table],
  );
}

export interface Reference {
  rel: string;
  column: string;
  cascade: boolean;
}

/**
 * Drops a partition. First, in one short transaction under a lock timeout, the rows of other tables that point into its
 * range go (as ON DELETE CASCADE would take them: a referencing table partitioned on the same bounds loses its
 * partition of the same range, another its rows of the range, a range of its index) and the partitions are detached.
 * Postgres refuses DETACH ... CONCURRENTLY on a table with a default partition, so this is a plain DETACH: a busy table
 * makes it fail, and the next run tries again. Messages have no foreign key pointing at them, so their detach verifies
 * nothing (docs/partitions.md, "References to messages"). Then the detached tables are dropped in a second transaction:
 * removing their files is most of the time, and no statement of the service waits on it. Answers the tables detached
 * and how long each step took.
 */
export async function dropPartition(db: Db, table: PartitionedTable, partition: Partition, dependents: Reference[]): Promise<DroppedPartition> {
  if (!partition.from || !partition.to || !BOUND.test(partition.from) || !BOUND.test(partition.to)) throw new Error('only a range partition is dropped');
  const twins = new Map<string, Partition | undefined>();
  for (const d of dependents) {
    if (PARTITIONED.some((p) => p.table === d.rel && p.key === d.column)) {
      const theirs = await listPartitions(db, d.rel as PartitionedTable);
      twins.set(d.rel, theirs.find((p) => p.from === partition.from && p.to === partition.to));
    }
  }
  const detached: string[] = [];
  const started = performance.now();
  await poolTransaction(
    db,
    async (query) => {
      await query(`SET LOCAL lock_timeout = '5s'`, []);
      for (const d of dependents) {
        if (!NAME.test(d.rel) || !NAME.test(d.column)) throw new Error(`not a table and column: ${d.rel}.${d.column}`);
        const twin = twins.get(d.rel);
        if (twin) {
          await query(`ALTER TABLE ${d.rel} DETACH PARTITION ${checked(twin.name)}`, []);
          detached.push(twin.name);
        } else {
          await query(`DELETE FROM ${d.rel} WHERE ${d.column} >= $1 AND ${d.column} < $2`, [partition.from, partition.to]);
        }
      }
      await query(`ALTER TABLE ${table} DETACH PARTITION ${checked(partition.name)}`, []);
      detached.push(partition.name);
    },
    600,
  );
  const detachMs = performance.now() - started;
  await dropDetached(db, detached);
  return { detached, detachMs, dropMs: performance.now() - started - detachMs };
}

export interface DroppedPartition {
  /** the partition and its twins of the tables that point at it */
  detached: string[];
  /** the first transaction's time: the live tables' locks held */
  detachMs: number;
  /** the second's: the detached tables' files removed */
  dropMs: number;
}

/** Drops tables detached from their partitioned table, in one transaction. */
export async function dropDetached(db: Db, names: string[]): Promise<void> {
  if (!names.length) return;
  await poolTransaction(db, async (query) => {
    for (const name of names) await query(`DROP TABLE IF EXISTS ${checked(name)}`, []);
  });
}

/**
 * The tables named as a partition of the table (`<table>_p<digits>...`) that are no partition: detached by a drop whose
 * second transaction did not run (the process stopped between the two). Retention drops them at its next run.
 */
export async function detachedLeftovers(db: Db, table: PartitionedTable): Promise<string[]> {
  const rows = await rawQuery<{ name: string }>(
    db,
    `SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND NOT relispartition AND relnamespace = 'public'::regnamespace
        AND relname ~ ('^' || $1 || '_p[0-9]{8}(_[0-9]{6})?$')`,
    [table],
  );
  return rows.map((r) => r.name);
}
