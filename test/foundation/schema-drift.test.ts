import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { expectedPgType, readPrismaSchema } from '../helpers/prisma-schema';

/**
 * The migrations are hand-written SQL (docs/DEVELOPERS.md), so this proves the migrated database is exactly what
 * schema.prisma describes: every model and column, type, nullability, primary key, unique and plain index, foreign key
 * and enum. A migration without its schema change (or the reverse) fails here. A partitioned table is read as its
 * parent (docs/partitions.md): its partitions, and the copies of its indexes and foreign keys Postgres makes on each,
 * are not models.
 */
const schema = readPrismaSchema(path.resolve(__dirname, '../../prisma/schema.prisma'));
const modelNames = new Set(schema.models.keys());

interface ColumnRow {
  table: string;
  column: string;
  type: string;
  nullable: boolean;
}
interface IndexRow {
  table: string;
  index: string;
  unique: boolean;
  primary: boolean;
  columns: string[];
  partial: boolean;
}
interface ForeignKeyRow {
  table: string;
  columns: string[];
  target: string;
  target_columns: string[];
}

const sorted = (lists: string[][]) => lists.map((l) => l.join(',')).sort();

describe('the migrated database matches schema.prisma', () => {
  let columns: ColumnRow[];
  let indexes: IndexRow[];
  let foreignKeys: ForeignKeyRow[];

  beforeAll(async () => {
    columns = await db().$queryRawUnsafe<ColumnRow[]>(`
      SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped AND c.relname <> '_prisma_migrations'`);
    indexes = await db().$queryRawUnsafe<IndexRow[]>(`
      SELECT t.relname AS table, i.relname AS index, x.indisunique AS unique, x.indisprimary AS primary, x.indpred IS NOT NULL AS partial,
             array(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY k(attnum, ord) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS columns
      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = 'public' AND NOT t.relispartition AND t.relname <> '_prisma_migrations'`);
    foreignKeys = await db().$queryRawUnsafe<ForeignKeyRow[]>(`
      SELECT t.relname AS table, f.relname AS target,
             array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(attnum, ord) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS columns,
             array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(attnum, ord) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS target_columns
      FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class f ON f.oid = c.confrelid
      WHERE c.contype = 'f' AND c.conparentid = 0`);
  });

  it('has a table for every model and no table without one', () => {
    const tables = new Set(columns.map((c) => c.table));
    expect([...tables].sort()).toEqual([...schema.models.values()].map((m) => m.table).sort());
  });

  it.each([...schema.models.values()].map((m) => [m.name, m] as const))('%s: columns, types and nullability', (_name, model) => {
    const actual = columns
      .filter((c) => c.table === model.table)
      .map((c) => ({ column: c.column, type: c.type, nullable: c.nullable }))
      .sort((a, b) => a.column.localeCompare(b.column));
    const expected = model.fields
      .filter((f) => !modelNames.has(f.type))
      // Prisma creates scalar lists as nullable arrays
      .map((f) => ({ column: f.column, type: expectedPgType(f, schema.enums), nullable: f.optional || f.list }))
      .sort((a, b) => a.column.localeCompare(b.column));
    expect(actual).toEqual(expected);
  });

  it.each([...schema.models.values()].map((m) => [m.name, m] as const))('%s: primary key, unique and plain indexes', (_name, model) => {
    const mine = indexes.filter((i) => i.table === model.table && !i.partial);
    expect(mine.filter((i) => i.primary).map((i) => i.columns)).toEqual([model.primaryKey]);
    expect(sorted(mine.filter((i) => i.unique && !i.primary).map((i) => i.columns))).toEqual(sorted(model.uniques));
    expect(sorted(mine.filter((i) => !i.unique).map((i) => i.columns))).toEqual(sorted(model.indexes));
  });

  it.each([...schema.models.values()].map((m) => [m.name, m] as const))('%s: foreign keys', (_name, model) => {
    const expected = model.fields
      // a reference to a message is kept by a trigger, not a foreign key (the next test)
      .filter((f) => f.relation && f.relation.fields.length && f.type !== 'Message')
      .map((f) => {
        const target = schema.models.get(f.type)!;
        const col = (m: typeof model, field: string) => m.fields.find((x) => x.name === field)?.column ?? field;
        return `${f.relation!.fields.map((x) => col(model, x)).join(',')}->${target.table}(${f.relation!.references.map((x) => col(target, x)).join(',')})`;
      })
      .sort();
    const actual = foreignKeys
      .filter((fk) => fk.table === model.table)
      .map((fk) => `${fk.columns.join(',')}->${fk.target}(${fk.target_columns.join(',')})`)
      .sort();
    expect(actual).toEqual(expected);
  });

  it('keeps every reference to a message by the trigger message_reference on its message_id (docs/partitions.md)', async () => {
    const expected = [...schema.models.values()]
      .filter((m) => m.fields.some((f) => f.type === 'Message' && f.relation?.fields.length))
      .map((m) => {
        const field = m.fields.find((f) => f.type === 'Message' && f.relation)!;
        return `${m.table}.${m.fields.find((f) => f.name === field.relation!.fields[0])!.column}`;
      })
      .sort();
    const triggers = await db().$queryRawUnsafe<{ table: string }[]>(`
      SELECT t.tgrelid::regclass::text AS table FROM pg_trigger t
      WHERE t.tgfoid = 'message_reference'::regproc AND t.tgparentid = 0 AND t.tgtype & 4 = 4`);
    expect(triggers.map((t) => `${t.table}.message_id`).sort()).toEqual(expected);
    expect(foreignKeys.filter((fk) => fk.target === 'messages')).toEqual([]);
  });

  it('has every enum with the same values in the same order', async () => {
    const rows = await db().$queryRawUnsafe<{ name: string; values: string[] }[]>(`
      SELECT t.typname AS name, array_agg(e.enumlabel ORDER BY e.enumsortorder)::text[] AS values
      FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname`);
    expect(Object.fromEntries(rows.map((r) => [r.name, r.values]))).toEqual(Object.fromEntries(schema.enums));
  });
});
