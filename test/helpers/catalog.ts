import { Client } from 'pg';

/**
 * What a database's schema is, as sorted lines (no oids): relations and their kinds, columns with types, defaults and
 * nullability, constraints, indexes, triggers (the internal ones by function and constraint), partitions with their
 * bounds, functions with their text, sequences' owners. Two databases with equal lines have the same schema.
 */
export async function catalogLines(url: string): Promise<Record<string, string[]>> {
  const db = new Client({ connectionString: url });
  await db.connect();
  const lines = async (text: string) => (await db.query<{ line: string }>(text)).rows.map((r) => r.line).sort();
  const publicRel = `c.relnamespace = 'public'::regnamespace`;
  try {
    return {
      relations: await lines(`SELECT c.relname || ' ' || c.relkind::text AS line FROM pg_class c WHERE ${publicRel}`),
      columns: await lines(`SELECT c.relname || '.' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
          || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') AS line
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE ${publicRel} AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped`),
      constraints: await lines(`SELECT c.conrelid::regclass || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
          || CASE WHEN c.convalidated THEN '' ELSE ' not valid' END || coalesce(' of ' || p.conname, '') AS line
        FROM pg_constraint c LEFT JOIN pg_constraint p ON p.oid = c.conparentid WHERE c.connamespace = 'public'::regnamespace`),
      indexes: await lines(`SELECT pg_get_indexdef(x.indexrelid) || CASE WHEN x.indisvalid THEN '' ELSE ' invalid' END AS line
        FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid WHERE ${publicRel}`),
      triggers: await lines(`SELECT t.tgrelid::regclass || ' ' || CASE WHEN t.tgisinternal THEN t.tgfoid::regproc || ' ' || t.tgtype::text || ' ' || coalesce(con.conname, '')
          ELSE pg_get_triggerdef(t.oid) END AS line
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid LEFT JOIN pg_constraint con ON con.oid = t.tgconstraint WHERE ${publicRel}`),
      partitions: await lines(`SELECT i.inhparent::regclass || ' ' || i.inhrelid::regclass || ' ' || coalesce(pg_get_expr(c.relpartbound, c.oid), '') AS line
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE ${publicRel}`),
      functions: await lines(`SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text || ' ' || p.prosrc AS line
        FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace`),
      sequences: await lines(`SELECT s.relname || ' owned by ' || coalesce(d.refobjid::regclass || '.' || a.attname, 'nothing') AS line
        FROM pg_class s LEFT JOIN pg_depend d ON d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
        LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE s.relkind = 'S' AND s.relnamespace = 'public'::regnamespace`),
      types: await lines(`SELECT t.typname || ' ' || coalesce((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid), '') AS line
        FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typtype = 'e'`),
    };
  } finally {
    await db.end();
  }
}
