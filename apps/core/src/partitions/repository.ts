import { poolTransaction, rawQuery, type Db } from '../db';
import { FINAL_STATUSES_SQL } from '../delivery/status';

/**
 * The SQL of time partitions (docs/partitions.md): the tables partitioned by RANGE of a time-ordered id, their
 * partitions as the catalog lists them, and the statements that make and drop them. Table and partition names are ours
 * (PARTITIONED and names made from dates), never a caller's text; bounds are ids made by ids/idFloor.
 */

/** Each partitioned table, the column its ranges are on, and what in a partition is still needed past the cutoff ($1). */
export const PARTITIONED = [
  // an email not finished, or finished after the cutoff (MESSAGE_ROWS_DAYS), keeps its partition
  { table: 'messages', key: 'id', needed: `status NOT IN ${FINAL_STATUSES_SQL} OR updated_at >= $1` },
  // partitioned by their message's id, on the same bounds as messages
  { table: 'message_attempts', key: 'message_id', needed: 'at >= $1' },
  // an event not yet fanned out keeps its partition (retention's rule for events)
  { table: 'events', key: 'id', needed: 'dispatched_at IS NULL OR created_at >= $1' },
  // an email's clicks and opens, by its id on the same bounds as messages (RETENTION_DAYS, as their row rules)
  { table: 'link_clicks', key: 'message_id', needed: 'at >= $1' },
  { table: 'message_opens', key: 'message_id', needed: 'last_at >= $1' },
  // the MX's messages: a held one waits for a person (docs/mx.md)
  { table: 'mx_messages', key: 'id', needed: `status = 'held' OR received_at >= $1` },
] as const;

export type PartitionedTable = (typeof PARTITIONED)[number]['table'];

export interface Partition {
  name: string;
  /** the range [from, to) of ids; null for the default partition */
  from: string | null;
  to: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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
    const range = /FROM \('([0-9a-f-]{36})'\) TO \('([0-9a-f-]{36})'\)/.exec(r.bound);
    return { name: r.name, from: range ? range[1]! : null, to: range ? range[2]! : null };
  });
}

/**
 * Makes the partition [from, to) of the table. Postgres scans the default partition to check that none of its rows
 * belongs in the new range (they would be strays: the statement then fails, and the partition is not made).
 */
export async function createPartition(db: Db, table: PartitionedTable, name: string, from: string, to: string): Promise<void> {
  if (!UUID.test(from) || !UUID.test(to)) throw new Error('a partition bound is an id');
  await poolTransaction(db, async (query) => {
    // it locks the table for a moment: a long wait for a lock would hold every insert queued behind it
    await query(`SET LOCAL lock_timeout = '5s'`, []);
    await query(`CREATE TABLE IF NOT EXISTS ${checked(name)} PARTITION OF ${table} FOR VALUES FROM ('${from}') TO ('${to}')`, []);
  });
}

/** Rows in a table's default partition (strays: ids no range holds), counted up to `cap`. */
export async function strayRows(db: Db, table: PartitionedTable, cap: number): Promise<number> {
  const [row] = await rawQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${checked(`${table}_default`)} LIMIT ${Math.floor(cap)}) x`);
  return row?.n ?? 0;
}

/** Whether the partition holds a row still needed past the cutoff (the table's `needed` rule). */
export async function partitionStillNeeded(db: Db, table: PartitionedTable, partition: string, cutoff: Date): Promise<boolean> {
  const rule = PARTITIONED.find((p) => p.table === table)!;
  const [row] = await rawQuery<{ needed: boolean }>(db, `SELECT EXISTS (SELECT 1 FROM ${checked(partition)} WHERE ${rule.needed}) AS needed`, [cutoff]);
  return row!.needed;
}

/**
 * The foreign keys that point at the table, from the catalog (so a table another feature adds is covered): each
 * referencing table and column, and whether its rows go with the row they point at (ON DELETE CASCADE).
 */
export async function referencesTo(db: Db, table: PartitionedTable): Promise<{ rel: string; column: string; cascade: boolean }[]> {
  return rawQuery<{ rel: string; column: string; cascade: boolean }>(
    db,
    `SELECT c.conrelid::regclass::text AS rel, a.attname AS column, c.confdeltype = 'c' AS cascade
       FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f' AND c.confrelid = $1::regclass AND c.conparentid = 0 AND array_length(c.conkey, 1) = 1`,
    [table],
  );
}

/**
 * Drops a partition: the rows of other tables that point into its range go first (as ON DELETE CASCADE would take
 * them), then it is detached and dropped in one short transaction. Postgres refuses DETACH ... CONCURRENTLY on a table
 * with a default partition, so this is a plain DETACH under a lock timeout: a busy table makes it fail, and the next
 * run tries again.
 */
export async function dropPartition(db: Db, table: PartitionedTable, partition: Partition, dependents: { rel: string; column: string }[]): Promise<void> {
  if (!partition.from || !partition.to || !UUID.test(partition.from) || !UUID.test(partition.to)) throw new Error('only a range partition is dropped');
  await poolTransaction(
    db,
    async (query) => {
      for (const d of dependents) {
        if (!NAME.test(d.rel) || !NAME.test(d.column)) throw new Error(`not a table and column: ${d.rel}.${d.column}`);
        await query(`DELETE FROM ${d.rel} WHERE ${d.column} >= $1 AND ${d.column} < $2`, [partition.from, partition.to]);
      }
      await query(`SET LOCAL lock_timeout = '5s'`, []);
      await query(`ALTER TABLE ${table} DETACH PARTITION ${checked(partition.name)}`, []);
      await query(`DROP TABLE ${checked(partition.name)}`, []);
    },
    600,
  );
}
