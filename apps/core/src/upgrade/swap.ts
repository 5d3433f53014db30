import type { Client } from 'pg';
import { MIGRATION, PROGRESS, TABLES, foreignKeys, ident, mirrorOf, monthsOf, shadowOf, type StagedIndex } from './tables';

/**
 * The migration's step when a preparation is there (prepare.ts): instead of copying the rows in its transaction, the
 * runner swaps the prepared copies in, then runs the rest of the migration's own text (its functions, the key tables
 * and their rows, the claim trigger, the events' default, the foreign keys of the new tables), so the database ends
 * as the offline copy leaves it. Answers the swap to run in the migration's transaction, or undefined when there is
 * nothing to swap (the migration then runs as written); refuses a preparation not finished, before anything is done.
 */
export async function preparedSwap(client: Client, migration: { name: string; sql: string }): Promise<(() => Promise<void>) | undefined> {
  if (migration.name !== MIGRATION) return undefined;
  const { rows: [found] } = await client.query<{ staged: boolean }>('SELECT to_regclass($1) IS NOT NULL AS staged', [PROGRESS]);
  if (!found!.staged) return undefined;
  const { rows: progress } = await client.query<{ table_name: string; state: string; indexes: StagedIndex[] }>(
    `SELECT table_name, state, indexes FROM ${ident(PROGRESS)} ORDER BY position`,
  );
  if (progress.length !== TABLES.length || progress.some((p) => p.state !== 'copied')) {
    throw new Error('the online preparation of the time partitions is not finished: run `npm run partitions:prepare` to its end '
      + '(it resumes), or `npm run partitions:prepare -- --abandon` to upgrade by the offline copy');
  }
  const rest = withoutCopies(migration.sql);
  return () => swap(client, progress, rest);
}

async function swap(client: Client, progress: { table_name: string; indexes: StagedIndex[] }[], rest: string): Promise<void> {
  // every foreign key into or out of the three tables, made again on the new ones once they have the old names
  const keys = await foreignKeys(client);
  for (const fk of keys) await client.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${ident(fk.name)}`);
  for (const { table, key } of TABLES) {
    await client.query(`DROP TABLE ${ident(table)}`);
    await client.query(`DROP FUNCTION ${ident(mirrorOf(table))}()`);
    await client.query(`ALTER TABLE ${ident(shadowOf(table))} RENAME TO ${ident(table)}`);
    for (const index of progress.find((p) => p.table_name === table)!.indexes) {
      await client.query(index.constraint
        ? `ALTER TABLE ${ident(table)} RENAME CONSTRAINT ${ident(index.staged)} TO ${ident(index.final)}`
        : `ALTER INDEX ${ident(index.staged)} RENAME TO ${ident(index.final)}`);
    }
    // the months the migration, run now, would make beyond those made at the preparation (a month may have begun)
    for (const month of await monthsOf(client, table, key, table)) {
      const { rows: [there] } = await client.query<{ made: boolean }>('SELECT to_regclass($1) IS NOT NULL AS made', [month.name]);
      if (!there!.made) await client.query(`CREATE TABLE ${ident(month.name)} PARTITION OF ${ident(table)} FOR VALUES FROM ('${month.from}') TO ('${month.to}')`);
    }
  }
  for (const fk of keys) await client.query(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`);
  await client.query(`DROP TABLE ${ident(PROGRESS)}`);
  await client.query(rest);
}

/** The migration's text without its three copies (`SELECT pg_temp.repartition(...)`); refused if they are not all there. */
export function withoutCopies(sql: string): string {
  const calls: string[] = [];
  const rest = sql.replace(/^SELECT pg_temp\.repartition\('(\w+)', '(\w+)'\);\n/gm, (_, table: string, key: string) => {
    calls.push(`${table}.${key}`);
    return '';
  });
  if (calls.join() !== TABLES.map((t) => `${t.table}.${t.key}`).join()) {
    throw new Error(`${MIGRATION} does not copy ${TABLES.map((t) => t.table).join(', ')} as the preparation expects`);
  }
  return rest;
}
