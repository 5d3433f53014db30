import type { Client } from 'pg';

/**
 * The online upgrade to time partitions (docs/partitions.md, "Upgrading an existing installation"): what
 * `20261129190000_time_partitions` rebuilds, the names the preparation uses beside the live tables, and the catalog
 * reads both halves (prepare.ts, swap.ts) share.
 */

/**
 * The migrations the preparation stands in for, and the tables each copies with their partition keys. How the text
 * copies: `call`, the function it calls once per table (`SELECT pg_temp.<call>('table', 'key');`), or `statements`,
 * those of its statements the preparation has done (by their beginnings), with the one the swap runs in place of
 * (`at`). `likeMessages`: partitioned on the bounds of messages' partitions, the primary key widened to hold the key
 * (20261130060000's rule). `months`: the partitions made, from the oldest row's month (`oldest`), as messages'
 * (`messages`), or the current month and three ahead of bigint ids of milliseconds (`ahead`, 20261202050100's DO block).
 */
export interface Plan {
  migration: string;
  call?: string;
  statements?: { done: readonly string[]; at: string };
  likeMessages: boolean;
  months: 'oldest' | 'messages' | 'ahead';
  tables: readonly PlannedTable[];
}

export interface PlannedTable {
  table: string;
  key: string;
  /** a migration between the preparation's point and this table's that changes the table: the copy has its shape from the start */
  ahead?: Ahead;
  /** a column's type in the copy, when the migration widens it (the partition key's before it copies: it cannot change after) */
  widen?: { column: string; type: string };
  /** not partitioned: a copy like the old table, which the migration changes in place (a column widened: a rewrite) */
  plain?: boolean;
  /** unique indexes (by their columns) the migration leaves out: what they kept unique moved to a table of its own */
  unique?: readonly string[];
  /** that table, filled from the old rows by the migration: made by its own statements on a copy, filled by the mirror and the batches */
  claims?: Claims;
}

/**
 * A table a migration makes and fills with one row per old row (20261202050100's inbound_uids), prepared as its copy:
 * `made`, the migration's statements that make it (by their beginnings), run on the copy's name at the preparation;
 * `columns`, each with its value from the old row (the migration's INSERT ... SELECT); `owner`, its column naming the
 * old row by that row's key, by which the mirror finds it.
 */
export interface Claims {
  table: string;
  made: readonly string[];
  columns: readonly { name: string; value: (row: string) => string }[];
  owner: { column: string; key: string };
}

/**
 * What a migration applied before the swap adds to a prepared table, made on the copy at the preparation instead: its
 * columns, each with its value from the old row's columns (the migration's UPDATE, applied to every row the copy and
 * the mirror write), and its indexes. `done`: its statements (by their beginnings) that the copy holds already, which
 * the runner leaves out, running the rest (its ADD COLUMN, on the old table that the swap then drops).
 */
export interface Ahead {
  migration: string;
  columns: readonly { name: string; type: string; value: (row: string) => string }[];
  indexes: readonly { name: string; columns: readonly string[] }[];
  done: readonly string[];
}

/** 20261130040000: mx_messages' delivered_at, set to received_at for the delivered ones, and its index. */
const MX_DELIVERED_AT: Ahead = {
  migration: '20261130040000_mx_delivered_at',
  columns: [{ name: 'delivered_at', type: 'timestamptz(3)', value: (row) => `CASE WHEN ${row}."status" = 'delivered' THEN ${row}."received_at" END` }],
  indexes: [{ name: 'mx_messages_account_id_delivered_at_idx', columns: ['account_id', 'delivered_at'] }],
  done: ['UPDATE "mx_messages" SET "delivered_at"', 'CREATE INDEX "mx_messages_account_id_delivered_at_idx"'],
};

export const PLANS: readonly Plan[] = [
  {
    migration: '20261129190000_time_partitions',
    call: 'repartition',
    likeMessages: false,
    months: 'oldest',
    tables: [{ table: 'messages', key: 'id' }, { table: 'message_attempts', key: 'message_id' }, { table: 'events', key: 'id' }],
  },
  {
    migration: '20261130060000_partitions_tracking_mx',
    call: 'partition_like_messages',
    likeMessages: true,
    months: 'messages',
    tables: [{ table: 'link_clicks', key: 'message_id' }, { table: 'message_opens', key: 'message_id' }, { table: 'mx_messages', key: 'id', ahead: MX_DELIVERED_AT }],
  },
  {
    // ids widened to bigint (kept as they are: all sit in the default partition), the uid claims moved to inbound_uids
    migration: '20261202050100_inbound_partitions',
    statements: {
      done: [
        'ALTER TABLE "inbound_attachments" ALTER COLUMN "inbound_message_id" SET DATA TYPE BIGINT',
        'ALTER TABLE "inbound_messages_legacy" ALTER COLUMN "id" SET DATA TYPE BIGINT',
        'CREATE TABLE "inbound_messages" (',
        'CREATE TABLE "inbound_messages_default"',
        'DO $$',
        'ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_pkey"',
        'CREATE INDEX "inbound_messages_mailbox_id_id_idx"',
        'CREATE TABLE "inbound_uids"',
        'CREATE UNIQUE INDEX "inbound_uids_inbound_message_id_key"',
        'INSERT INTO "inbound_messages"',
        'INSERT INTO "inbound_uids"',
      ],
      at: 'CREATE TABLE "inbound_messages" (',
    },
    likeMessages: false,
    months: 'ahead',
    tables: [{
      table: 'inbound_messages',
      key: 'id',
      widen: { column: 'id', type: 'bigint' },
      unique: ['mailbox_id,uid_validity,uid'],
      claims: {
        table: 'inbound_uids',
        made: ['CREATE TABLE "inbound_uids"', 'CREATE UNIQUE INDEX "inbound_uids_inbound_message_id_key"'],
        columns: ['mailbox_id', 'uid_validity', 'uid'].map((name) => ({ name, value: (row: string) => `${row}.${ident(name)}` }))
          .concat({ name: 'inbound_message_id', value: (row: string) => `${row}."id"` }),
        owner: { column: 'inbound_message_id', key: 'id' },
      },
    }, { table: 'inbound_attachments', key: 'id', plain: true, widen: { column: 'inbound_message_id', type: 'bigint' } }],
  },
];
export const MIGRATION = PLANS[0]!.migration;
export const TABLES = PLANS.flatMap((plan) => plan.tables.map((t) => ({ ...t, plan })));

/** The progress table: one row per table, its copy's position and counts. */
export const PROGRESS = 'partitions_online';

/** The partitioned copy of a table while the old one serves (its partitions have their final names already). */
export const shadowOf = (table: string): string => `${table}_online`;
/** The trigger (and its function) on the old table that mirrors each write into the copy. */
export const mirrorOf = (table: string): string => `${table}_online_mirror`;
/** An index's name on the copy until the swap gives it the old one's (index names are one namespace). */
export const stagedName = (name: string): string => `${name.slice(0, 56)}_online`;

export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** The smallest UUIDv7 of an instant, as the migration's uuid_v7_floor (which does not exist before it). */
const floorOf = (t: string) => `(lpad(to_hex(floor(extract(epoch FROM ${t}) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid`;

export interface Month {
  name: string;
  from: string;
  to: string;
}

/**
 * The monthly partitions the migration makes for `table`: from the month of its oldest time-carrying id (ids before
 * ids carried their time go to the default) to three months after the current one, bounded as uuid_v7_floor bounds.
 */
export async function monthsOf(client: Client, table: string, key: string, partitioned: string): Promise<Month[]> {
  const { rows } = await client.query<Month>(
    `WITH oldest AS (
       SELECT (SELECT ('x' || substr(replace(${ident(key)}::text, '-', ''), 1, 12))::bit(48)::bigint FROM ${ident(table)}
                WHERE substr(${ident(key)}::text, 15, 1) = '7' AND ${ident(key)} < ${floorOf("now() + interval '1 year'")}
                ORDER BY ${ident(key)} LIMIT 1) AS ms)
     SELECT $1 || '_p' || to_char(m, 'YYYYMMDD') AS name, ${floorOf("m AT TIME ZONE 'UTC'")}::text AS "from",
            ${floorOf("(m + interval '1 month') AT TIME ZONE 'UTC'")}::text AS "to"
       FROM oldest, generate_series(date_trunc('month', least(now(), coalesce(to_timestamp(ms / 1000.0), now())) AT TIME ZONE 'UTC'),
                                    date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months', interval '1 month') m`,
    [partitioned],
  );
  return rows;
}

export interface Column {
  name: string;
  type: string;
}

/** The table's columns in order, and its primary key's, with their types. */
export async function columnsOf(client: Client, table: string): Promise<{ columns: Column[]; primary: Column[] }> {
  const { rows: columns } = await client.query<Column>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  const { rows: key } = await client.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_index x, unnest(x.indkey) WITH ORDINALITY k(n, o), pg_attribute a
      WHERE x.indrelid = $1::regclass AND x.indisprimary AND a.attrelid = x.indrelid AND a.attnum = k.n ORDER BY k.o`,
    [table],
  );
  return { columns, primary: key.map((k) => columns.find((c) => c.name === k.name)!) };
}

export interface StagedIndex {
  staged: string;
  final: string;
  /** made as a constraint (primary key, unique constraint): renamed with RENAME CONSTRAINT */
  constraint: boolean;
}

/** The foreign keys into and out of the upgraded tables (not the copies Postgres makes for partitions). */
export async function foreignKeys(client: Client, tables: readonly { table: string }[]): Promise<{ table: string; name: string; def: string }[]> {
  const { rows } = await client.query<{ table: string; name: string; def: string }>(
    `SELECT DISTINCT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
       FROM pg_constraint c
      WHERE c.contype = 'f' AND c.conparentid = 0
        AND (c.conrelid = ANY ($1::regclass[]) OR c.confrelid = ANY ($1::regclass[]))
      ORDER BY 1, 2`,
    [tables.map((t) => t.table)],
  );
  return rows;
}

/**
 * The current month and the three after it, as 20261202050100 makes them for `partitioned`: bounds of bigint ids, the
 * month's Unix milliseconds times 1,000 (inbound_id()).
 */
export async function monthsAhead(client: Client, partitioned: string): Promise<Month[]> {
  const bound = (t: string) => `(floor(extract(epoch FROM ${t} AT TIME ZONE 'UTC') * 1000)::bigint * 1000)::text`;
  const { rows } = await client.query<Month>(
    `SELECT $1 || '_p' || to_char(m, 'YYYYMMDD') AS name, ${bound('m')} AS "from", ${bound("(m + interval '1 month')")} AS "to"
       FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'), date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months', interval '1 month') m`,
    [partitioned],
  );
  return rows;
}

/** The partitions the plan's migration makes for `table` (named for it) at this moment; `messages`: messages' table to copy the bounds of. */
export async function monthsFor(client: Client, plan: Plan, table: string, key: string, messages: string): Promise<Month[]> {
  if (plan.months === 'messages') return monthsLikeMessages(client, messages, table);
  if (plan.months === 'ahead') return monthsAhead(client, table);
  return monthsOf(client, table, key, table);
}

/**
 * A migration's text as its statements, each from its first line that is not a comment to the line that ends it with
 * `;` outside a `$$` body; comments and blank lines between statements are left out.
 */
export function statementsOf(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  for (const line of sql.split('\n')) {
    if (!current.length && (!line.trim() || line.startsWith('--'))) continue;
    current.push(line);
    const text = current.join('\n');
    if (line.trimEnd().endsWith(';') && (text.split('$$').length - 1) % 2 === 0) {
      statements.push(text);
      current = [];
    }
  }
  if (current.length) statements.push(current.join('\n'));
  return statements;
}

/** The partitions of messages (or its copy) as the same months of `table`: 20261130060000's bounds. */
export async function monthsLikeMessages(client: Client, messages: string, table: string): Promise<Month[]> {
  const { rows } = await client.query<{ name: string; bound: string }>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass AND c.relname <> 'messages_default' ORDER BY c.relname`,
    [messages],
  );
  return rows.map((r) => {
    const [, from, to] = /FROM \('([^']+)'\) TO \('([^']+)'\)/.exec(r.bound)!;
    return { name: r.name.replace(/^messages_/, `${table}_`), from: from!, to: to! };
  });
}
