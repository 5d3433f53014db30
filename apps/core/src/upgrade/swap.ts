import type { Client } from 'pg';
import { logger } from '../logger';
import { PLANS, PROGRESS, foreignKeys, ident, mirrorOf, monthsFor, shadowOf, statementsOf, type Ahead, type Plan, type PlannedTable, type StagedIndex } from './tables';

/**
 * The migration's step when a preparation is there (prepare.ts): instead of copying the rows in its transaction, the
 * runner swaps the prepared copies in, then runs the rest of the migration's own text (for 20261129190000 its
 * functions, the key tables and their rows, the claim trigger, the events' default; for 20261130060000 nothing more),
 * so the database ends as the offline copy leaves it. A migration that copies by statements (20261202050100) runs
 * without those the preparation did, the swap in place of the one that makes the new table (swapInPlace). A migration
 * that changes a prepared table before its swap (20261130040000: mx_messages' delivered_at, made on the copy at the
 * preparation) runs without the statements the copy holds already. Answers the step to run in the migration's
 * transaction, or undefined when there is nothing to swap (the migration then runs as written); refuses a preparation
 * not finished, before anything is done.
 */
export async function preparedSwap(client: Client, migration: { name: string; sql: string }): Promise<(() => Promise<void>) | undefined> {
  const plan = PLANS.find((p) => p.migration === migration.name);
  const ahead = PLANS.flatMap((p) => p.tables.filter((t) => t.ahead?.migration === migration.name).map((t) => ({ plan: p, ahead: t.ahead! })))[0];
  if (!plan && !ahead) return undefined;
  const { rows: [found] } = await client.query<{ staged: boolean }>('SELECT to_regclass($1) IS NOT NULL AS staged', [PROGRESS]);
  if (!found!.staged) return undefined;
  // ahead of a swap, what is skipped commits the migration to it: the swap's tables must all be ready
  const progress = await finished(client, plan ?? ahead!.plan);
  if (ahead) {
    const rest = withoutDone(ahead.ahead, migration.sql);
    return async () => {
      await client.query(rest);
    };
  }
  if (plan!.statements) {
    const { before, after } = aroundSwap(plan!, plan!.statements, migration.sql);
    return () => swapInPlace(client, plan!, progress, before, after);
  }
  const rest = withoutCopies(plan!, migration.sql);
  return () => swap(client, plan!, progress, rest);
}

type Prepared = { table_name: string; indexes: StagedIndex[] }[];

/** The progress rows of the plan's tables; refused unless each is copied. */
async function finished(client: Client, plan: Plan): Promise<Prepared> {
  const { rows: progress } = await client.query<{ table_name: string; state: string; indexes: StagedIndex[] }>(
    `SELECT table_name, state, indexes FROM ${ident(PROGRESS)} WHERE table_name = ANY ($1) ORDER BY position`,
    [plan.tables.map((t) => t.table)],
  );
  if (progress.length !== plan.tables.length || progress.some((p) => p.state !== 'copied')) {
    throw new Error('the online preparation of the time partitions is not finished: run `npm run partitions:prepare` to its end '
      + '(it resumes), or `npm run partitions:prepare -- --abandon` to upgrade by the offline copy');
  }
  return progress;
}

async function swap(client: Client, plan: Plan, progress: Prepared, rest: string): Promise<void> {
  const started = Date.now();
  // every foreign key into or out of the tables, made again on the new ones once they have the old names
  const keys = await foreignKeys(client, plan.tables);
  for (const fk of keys) await client.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${ident(fk.name)}`);
  for (const planned of plan.tables) {
    const { table } = planned;
    // a serial column's sequence goes to the new table, as the migration moves it (dropping the old one would take it along)
    const { rows: sequences } = await client.query<{ column: string; seq: string }>(
      `SELECT a.attname AS column, pg_get_serial_sequence($1, a.attname) AS seq FROM pg_attribute a
        WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND pg_get_serial_sequence($1, a.attname) IS NOT NULL`,
      [table],
    );
    for (const s of sequences) await client.query(`ALTER SEQUENCE ${s.seq} OWNED BY ${ident(shadowOf(table))}.${ident(s.column)}`);
    await client.query(`DROP TABLE ${ident(table)}`);
    await client.query(`DROP FUNCTION ${ident(mirrorOf(table))}()`);
    await takeNames(client, plan, progress, planned);
  }
  const checked = Date.now();
  for (const fk of keys) await client.query(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`);
  const renameMs = checked - started;
  const foreignKeysMs = Date.now() - checked;
  await forget(client, plan);
  const restStarted = Date.now();
  await client.query(rest);
  logger.info({ migration: plan.migration, renameMs, foreignKeysMs, restMs: Date.now() - restStarted },
    `${plan.migration}: the prepared ${plan.tables.map((t) => t.table).join(', ')} swapped in, ${Date.now() - started} ms`);
}

/**
 * The swap of a migration that copies by statements: its statements before the one that makes the new table (for
 * 20261202050100 its function, the attachments' key widened, the old table renamed aside), then the prepared copies
 * under the final names, then its statements after (the sequence moved, the new default, the old table dropped with
 * its trigger, the foreign keys made and checked). The statements the preparation did are left out of both.
 */
async function swapInPlace(client: Client, plan: Plan, progress: Prepared, before: string, after: string): Promise<void> {
  const started = Date.now();
  await client.query(before);
  const renamed = Date.now();
  for (const planned of plan.tables) await takeNames(client, plan, progress, planned);
  const afterStarted = Date.now();
  await client.query(after);
  for (const { table } of plan.tables) await client.query(`DROP FUNCTION ${ident(mirrorOf(table))}()`);
  await forget(client, plan);
  logger.info({ migration: plan.migration, beforeMs: renamed - started, renameMs: afterStarted - renamed, afterMs: Date.now() - afterStarted },
    `${plan.migration}: the prepared ${plan.tables.map((t) => t.table).join(', ')} swapped in, ${Date.now() - started} ms`);
}

/**
 * The prepared copy of `table` (and of its claims) under the final names, with the partitions the migration, run now,
 * would make: those of a month that began since the preparation made, and for months made ahead (`ahead`) those of
 * months that ended since dropped (empty: the ids made before the swap all sit in the default partition).
 */
async function takeNames(client: Client, plan: Plan, progress: Prepared, { table, key, claims, plain }: PlannedTable): Promise<void> {
  // a table the migration changes in place (not renamed aside by its text): dropped, with its trigger
  if (plain) await client.query(`DROP TABLE ${ident(table)}`);
  await client.query(`ALTER TABLE ${ident(shadowOf(table))} RENAME TO ${ident(table)}`);
  for (const index of progress.find((p) => p.table_name === table)!.indexes) {
    await client.query(index.constraint
      ? `ALTER TABLE ${ident(table)} RENAME CONSTRAINT ${ident(index.staged)} TO ${ident(index.final)}`
      : `ALTER INDEX ${ident(index.staged)} RENAME TO ${ident(index.final)}`);
  }
  if (claims) await client.query(`ALTER TABLE ${ident(shadowOf(claims.table))} RENAME TO ${ident(claims.table)}`);
  if (plain) return;
  const months = await monthsFor(client, plan, table, key, 'messages');
  for (const month of months) {
    const { rows: [there] } = await client.query<{ made: boolean }>('SELECT to_regclass($1) IS NOT NULL AS made', [month.name]);
    if (!there!.made) await client.query(`CREATE TABLE ${ident(month.name)} PARTITION OF ${ident(table)} FOR VALUES FROM ('${month.from}') TO ('${month.to}')`);
  }
  if (plan.months !== 'ahead') return;
  const { rows: ended } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT' AND NOT (c.relname = ANY ($2))`,
    [table, months.map((m) => m.name)],
  );
  for (const { name } of ended) await client.query(`DROP TABLE ${ident(name)}`);
}

/** The plan's progress rows deleted, and the progress table once it has none. */
async function forget(client: Client, plan: Plan): Promise<void> {
  await client.query(`DELETE FROM ${ident(PROGRESS)} WHERE table_name = ANY ($1)`, [plan.tables.map((t) => t.table)]);
  const { rows: [left] } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(PROGRESS)}`);
  if (left!.n === 0) await client.query(`DROP TABLE ${ident(PROGRESS)}`);
}

/**
 * The migration's statements without those the preparation did, split at the one the swap replaces; refused unless
 * each statement named is there (the replaced one once).
 */
export function aroundSwap(plan: Plan, statements: NonNullable<Plan['statements']>, sql: string): { before: string; after: string } {
  const all = statementsOf(sql);
  const at = all.filter((s) => s.startsWith(statements.at));
  if (at.length !== 1) throw new Error(`${plan.migration} does not make ${plan.tables[0]!.table} as the preparation expects`);
  const split = all.indexOf(at[0]!);
  return {
    before: without(plan.migration, all.slice(0, split), statements.done, all),
    after: without(plan.migration, all.slice(split + 1), statements.done, all),
  };
}

/** A migration's text without the statements the prepared copy holds already. */
export function withoutDone(ahead: Ahead, sql: string): string {
  const all = statementsOf(sql);
  return without(ahead.migration, all, ahead.done, all);
}

/** `part` of the migration's statements without those that begin as one of `done` says; refused unless each begins one of `all`. */
function without(migration: string, part: string[], done: readonly string[], all: string[]): string {
  const missing = done.find((start) => !all.some((s) => s.startsWith(start)));
  if (missing) throw new Error(`${migration} has no statement \`${missing}...\` as the preparation expects`);
  return part.filter((s) => !done.some((start) => s.startsWith(start))).join('\n');
}

/** The migration's text without the copies of the prepared tables (`SELECT pg_temp.<call>('table', 'key');`); refused if one is not there. */
export function withoutCopies(plan: Plan, sql: string): string {
  let rest = sql;
  for (const { table, key } of plan.tables) {
    const call = `SELECT pg_temp.${plan.call}('${table}', '${key}');\n`;
    if (rest.split(call).length !== 2) throw new Error(`${plan.migration} does not copy ${table} as the preparation expects`);
    rest = rest.replace(call, '');
  }
  return rest;
}
