import { Client } from 'pg';
import { logger } from '../logger';
import { readMigrations } from '../migrate';
import { MIGRATION, PROGRESS, TABLES, columnsOf, ident, mirrorOf, monthsFor, shadowOf, stagedName, statementsOf, type Ahead, type Claims, type Column, type Plan, type PlannedTable, type StagedIndex } from './tables';

/**
 * `npm run partitions:prepare` (docs/partitions.md, "Upgrading an existing installation"), run against a database
 * still at the previous schema while the previous version serves: the partitioned copies of messages,
 * message_attempts, events, link_clicks, message_opens, mx_messages (with what 20261130040000 adds to it) and
 * inbound_messages (its ids bigint; its uid claims in a copy of inbound_uids; inbound_attachments copied with their
 * key bigint) under other names, triggers that mirror each write of the old tables into them, and a copy of the rows
 * already there in batches, its position kept in `partitions_online` so that a killed run resumes. The migrations then
 * swap the copies in (swap.ts) instead of copying.
 */

// held while a preparation runs: a second one refuses to start
const PREPARE_LOCK_KEY = 72707370;

export interface Progress {
  table: string;
  copied: number;
  total: number;
  /** rows a second in this run */
  rate: number;
  done: boolean;
}

export interface PrepareOptions {
  /** rows a transaction */
  batch?: number;
  /** a log line every this many batches (and one at each table's end) */
  logEvery?: number;
  onProgress?: (progress: Progress) => void;
}

/** `messages: 1,200,000 of 3,400,000 rows (35%), 41,000 rows/s` */
export function progressLine(p: Progress): string {
  const n = (v: number) => Math.round(v).toLocaleString('en-US');
  const percent = p.total ? Math.min(100, Math.floor((p.copied / p.total) * 100)) : 100;
  return `${p.table}: ${n(p.copied)} of ${n(Math.max(p.total, p.copied))} rows (${percent}%), ${n(p.rate)} rows/s${p.done ? ', done' : ''}`;
}

export async function prepare(url: string, options: PrepareOptions = {}): Promise<Progress[]> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows: [lock] } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1) AS held', [PREPARE_LOCK_KEY]);
    if (!lock!.held) throw new Error('another partitions:prepare is running on this database');
    await stage(client);
    const done: Progress[] = [];
    for (const planned of TABLES) done.push(await copyRows(client, planned, options));
    return done;
  } finally {
    await client.end();
  }
}

/** The copies, their partitions and indexes, the mirror triggers and the progress rows, in one transaction; once. */
async function stage(client: Client): Promise<void> {
  const { rows: [state] } = await client.query<{ migrated: boolean; staged: boolean }>(
    `SELECT to_regclass($1) IS NOT NULL AS staged,
            to_regclass('_prisma_migrations') IS NOT NULL
              AND EXISTS (SELECT 1 FROM "_prisma_migrations" WHERE migration_name = $2 AND rolled_back_at IS NULL) AS migrated`,
    [PROGRESS, MIGRATION],
  );
  if (state!.migrated) throw new Error(`${MIGRATION} is applied already: the tables are partitioned`);
  if (state!.staged) return;
  await client.query('BEGIN');
  try {
    // the trigger waits for the writes in flight and holds new ones meanwhile: give up rather than stall the service
    await client.query("SET LOCAL lock_timeout = '10s'");
    await client.query(`CREATE TABLE ${ident(PROGRESS)} (
      table_name text PRIMARY KEY, position int NOT NULL, state text NOT NULL DEFAULT 'copying',
      total bigint, copied bigint NOT NULL DEFAULT 0, last_key text[], indexes jsonb NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz)`);
    for (const [position, planned] of TABLES.entries()) {
      const { table, plan, ahead, claims } = planned;
      const indexes = await makeShadow(client, planned, plan);
      if (claims) await makeClaims(client, plan, claims);
      await makeMirror(client, table, ahead, claims);
      await client.query(`INSERT INTO ${ident(PROGRESS)} (table_name, position, indexes) VALUES ($1, $2, $3)`, [table, position, JSON.stringify(indexes)]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    // 55P03 lock_not_available: a transaction of the service held a table past the lock_timeout
    if ((err as { code?: string }).code === '55P03') throw new Error('waited 10 s for a table a transaction of the service holds: run it again');
    throw err;
  }
}

/**
 * The partitioned table the migration would make, as the migration makes it, under the name shadowOf(table); with the
 * columns a migration `ahead` adds after the old ones (where its ADD COLUMN puts them), and its indexes. A `plain`
 * table's copy is not partitioned: the old table as the migration leaves it.
 */
async function makeShadow(client: Client, { table, key, ahead, widen, unique, plain }: PlannedTable, plan: Plan): Promise<StagedIndex[]> {
  const { likeMessages } = plan;
  const shadow = shadowOf(table);
  const like = `INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS`;
  // a widened column, as the migration widens it: on a table like the old one, which the copy is then made like
  const template = widen ? `${shadow}_like` : table;
  if (widen) {
    await client.query(`CREATE TABLE ${ident(template)} (LIKE ${ident(table)} ${like})`);
    await client.query(`ALTER TABLE ${ident(template)} ALTER COLUMN ${ident(widen.column)} SET DATA TYPE ${widen.type}`);
  }
  await client.query(`CREATE TABLE ${ident(shadow)} (LIKE ${ident(template)} ${like})${plain ? '' : ` PARTITION BY RANGE (${ident(key)})`}`);
  if (widen) await client.query(`DROP TABLE ${ident(template)}`);
  for (const column of ahead?.columns ?? []) await client.query(`ALTER TABLE ${ident(shadow)} ADD COLUMN ${ident(column.name)} ${column.type}`);
  if (!plain) {
    await client.query(`CREATE TABLE ${ident(`${table}_default`)} PARTITION OF ${ident(shadow)} DEFAULT`);
    const months = await monthsFor(client, plan, table, key, shadowOf('messages'));
    for (const month of months) {
      await client.query(`CREATE TABLE ${ident(month.name)} PARTITION OF ${ident(shadow)} FOR VALUES FROM ('${month.from}') TO ('${month.to}')`);
    }
  }
  const { rows } = await client.query<{ name: string; unique: boolean; conname: string | null; condef: string | null; def: string; columns: string[] }>(
    `SELECT i.relname AS name, x.indisunique AS unique, con.conname, pg_get_constraintdef(con.oid) AS condef, pg_get_indexdef(x.indexrelid) AS def,
            array(SELECT a.attname::text FROM unnest(x.indkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n ORDER BY k.o) AS columns
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
      WHERE x.indrelid = $1::regclass ORDER BY x.indexrelid`,
    [table],
  );
  const staged: StagedIndex[] = [];
  for (const index of rows) {
    if (index.conname && likeMessages && index.condef?.startsWith('PRIMARY KEY') && !index.columns.includes(key)) {
      // 20261130060000's rule: the primary key widened to hold the partition key, first
      staged.push({ staged: stagedName(index.conname), final: index.conname, constraint: true });
      await client.query(`ALTER TABLE ${ident(shadow)} ADD CONSTRAINT ${ident(stagedName(index.conname))} PRIMARY KEY (${[key, ...index.columns].map(ident).join(', ')})`);
    } else if (index.unique && !index.columns.includes(key) && unique?.includes(index.columns.join(','))) {
      // 20261202050100's rule: the uid claims' key is inbound_uids' (makeClaims), not the table's
      continue;
    } else if (index.unique && !index.columns.includes(key) && !plain) {
      // 20261129190000's rule: the two keys that moved to message_steps and broadcast_copies become plain indexes
      const moved = !likeMessages && table === 'messages' && ['prospect_id,step', 'broadcast_id,subscriber_id'].includes(index.columns.join(','));
      if (!moved) throw new Error(`unique index ${index.name} of ${table} does not hold the partition key ${key}: give it a table of its own`);
      const final = `${table}_${index.columns.join('_')}_idx`;
      staged.push({ staged: stagedName(final), final, constraint: false });
      await client.query(`CREATE INDEX ${ident(stagedName(final))} ON ${ident(shadow)} (${index.columns.map(ident).join(', ')})`);
    } else if (index.conname) {
      staged.push({ staged: stagedName(index.conname), final: index.conname, constraint: true });
      await client.query(`ALTER TABLE ${ident(shadow)} ADD CONSTRAINT ${ident(stagedName(index.conname))} ${index.condef}`);
    } else {
      staged.push({ staged: stagedName(index.name), final: index.name, constraint: false });
      const def = index.def.replace(/^(CREATE (?:UNIQUE )?INDEX )\S+( ON (?:ONLY )?)\S+/, `$1${ident(stagedName(index.name))}$2${ident(shadow)}`);
      await client.query(def);
    }
  }
  for (const index of ahead?.indexes ?? []) {
    staged.push({ staged: stagedName(index.name), final: index.name, constraint: false });
    await client.query(`CREATE INDEX ${ident(stagedName(index.name))} ON ${ident(shadow)} (${index.columns.map(ident).join(', ')})`);
  }
  return staged;
}

/** The copy of the claims table, made by the migration's own statements (its constraints and indexes keep their names: none exists yet). */
async function makeClaims(client: Client, plan: Plan, claims: Claims): Promise<void> {
  const migration = readMigrations().find((m) => m.name === plan.migration);
  const made = statementsOf(migration?.sql ?? '').filter((statement) => claims.made.some((start) => statement.startsWith(start)));
  if (made.length !== claims.made.length) throw new Error(`${plan.migration} does not make ${claims.table} as the preparation expects`);
  for (const statement of made) await client.query(statement.split(ident(claims.table)).join(ident(shadowOf(claims.table))));
}

/**
 * Each INSERT, UPDATE and DELETE of the old table made on the copy too, by the copy's primary key (a row copied twice
 * is one); the columns a migration `ahead` adds, from the row's last values as its UPDATE would set them; the row's
 * claim, made again from its last values.
 */
async function makeMirror(client: Client, table: string, ahead?: Ahead, claims?: Claims): Promise<void> {
  const { primary } = await columnsOf(client, shadowOf(table));
  const shadow = ident(shadowOf(table));
  const match = (row: string) => primary.map((c) => `${ident(c.name)} = ${row}.${ident(c.name)}`).join(' AND ');
  const keyChanged = primary.map((c) => `OLD.${ident(c.name)} IS DISTINCT FROM NEW.${ident(c.name)}`).join(' OR ');
  const { names, values } = await copiedColumns(client, table, 'NEW', ahead);
  const others = names.filter((name) => !primary.some((k) => ident(k.name) === name));
  const claim = claims && claimStatements(claims, shadowOf(claims.table));
  await client.query(`CREATE FUNCTION ${ident(mirrorOf(table))}() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  ${claim ? `IF TG_OP <> 'INSERT' THEN ${claim.remove('OLD')}; END IF;
  IF TG_OP <> 'DELETE' THEN ${claim.insert('VALUES', 'NEW')}; END IF;` : ''}
  IF TG_OP = 'DELETE' THEN
    DELETE FROM ${shadow} WHERE ${match('OLD')};
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    IF ${keyChanged} THEN DELETE FROM ${shadow} WHERE ${match('OLD')}; END IF;
  END IF;
  INSERT INTO ${shadow} (${names.join(', ')}) VALUES (${values.join(', ')})
    ON CONFLICT (${primary.map((c) => ident(c.name)).join(', ')}) DO ${others.length ? `UPDATE SET ${others.map((name) => `${name} = EXCLUDED.${name}`).join(', ')}` : 'NOTHING'};
  RETURN NULL;
END
$fn$`);
  await client.query(`CREATE TRIGGER ${ident(mirrorOf(table))} AFTER INSERT OR UPDATE OR DELETE ON ${ident(table)}
    FOR EACH ROW EXECUTE FUNCTION ${ident(mirrorOf(table))}()`);
}

/** The claim of an old row `row`: removed by its owner column, written from the row's values (a claim there already is kept). */
function claimStatements(claims: Claims, target: string): { remove: (row: string) => string; insert: (form: 'VALUES' | 'SELECT', row: string) => string } {
  const names = claims.columns.map((c) => ident(c.name)).join(', ');
  return {
    remove: (row) => `DELETE FROM ${ident(target)} WHERE ${ident(claims.owner.column)} = ${row}.${ident(claims.owner.key)}`,
    insert: (form, row) => {
      const values = claims.columns.map((c) => c.value(row)).join(', ');
      return `INSERT INTO ${ident(target)} (${names}) ${form === 'VALUES' ? `VALUES (${values})` : `SELECT ${values} FROM ${row}`} ON CONFLICT DO NOTHING`;
    },
  };
}

/** The copy's columns the mirror and the batches write, and their values from the old table's row named `row`. */
async function copiedColumns(client: Client, table: string, row: string, ahead?: Ahead): Promise<{ names: string[]; values: string[] }> {
  const { columns } = await columnsOf(client, table);
  return {
    names: [...columns.map((c) => ident(c.name)), ...(ahead?.columns ?? []).map((c) => ident(c.name))],
    values: [...columns.map((c) => `${row}.${ident(c.name)}`), ...(ahead?.columns ?? []).map((c) => c.value(row))],
  };
}

/**
 * Copies the table's rows into its copy in batches by primary key, from where the last run stopped. Each batch locks
 * the rows it reads (FOR SHARE): a write in flight on one of them ends first, so the batch reads its last version, or
 * skips the row when it was deleted, and a later write waits for the batch, whose row the mirror then updates.
 */
async function copyRows(client: Client, { table, ahead, claims }: PlannedTable, options: PrepareOptions): Promise<Progress> {
  const batch = options.batch ?? 10_000;
  const logEvery = options.logEvery ?? 10;
  const { primary } = await columnsOf(client, table);
  const { rows: [row] } = await client.query<{ state: string; total: string | null; copied: string; last_key: string[] | null }>(
    `SELECT state, total, copied, last_key FROM ${ident(PROGRESS)} WHERE table_name = $1`,
    [table],
  );
  if (!row) throw new Error(`${PROGRESS} has no row for ${table}: abandon the preparation and start again`);
  let total = Number(row.total ?? 0);
  if (row.total === null) {
    total = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(table)}`)).rows[0]!.n);
    await client.query(`UPDATE ${ident(PROGRESS)} SET total = $2 WHERE table_name = $1`, [table, total]);
  }
  let copied = Number(row.copied);
  let last = row.last_key;
  const started = Date.now();
  let read = 0;
  let batches = 0;
  const progress = (done: boolean): Progress => ({ table, copied, total, rate: read / Math.max((Date.now() - started) / 1000, 0.001), done });
  const claim = claims && claimStatements(claims, shadowOf(claims.table)).insert('SELECT', 'batch');
  const select = batchStatement(table, primary, await copiedColumns(client, table, 'batch', ahead), claim, batch);
  while (row.state !== 'copied') {
    await client.query('BEGIN');
    try {
      const { rows: [result] } = await client.query<{ read: number; last: string[] | null }>(last ? select.after : select.first, last ?? []);
      if (result!.read === 0) {
        await client.query(`UPDATE ${ident(PROGRESS)} SET state = 'copied', total = greatest(total, copied), updated_at = now(), finished_at = now() WHERE table_name = $1`, [table]);
        await client.query('COMMIT');
        total = Math.max(total, copied);
        break;
      }
      await client.query(`UPDATE ${ident(PROGRESS)} SET copied = copied + $2, last_key = $3, updated_at = now() WHERE table_name = $1`, [table, result!.read, result!.last]);
      await client.query('COMMIT');
      copied += result!.read;
      read += result!.read;
      last = result!.last;
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
    batches++;
    options.onProgress?.(progress(false));
    if (batches % logEvery === 0) logger.info({ table, copied, total }, `partitions:prepare ${progressLine(progress(false))}`);
  }
  const end = progress(true);
  options.onProgress?.(end);
  logger.info({ table, copied, total }, `partitions:prepare ${progressLine(end)}`);
  return end;
}

/** The batch's statement: the next rows by primary key (after the last key, given as text), copied, and the new last key. */
function batchStatement(table: string, primary: Column[], copied: { names: string[]; values: string[] }, claim: string | undefined, batch: number): { first: string; after: string } {
  const key = primary.map((c) => ident(c.name)).join(', ');
  const statement = (where: string) => `WITH batch AS (SELECT * FROM ${ident(table)} ${where} ORDER BY ${key} LIMIT ${batch} FOR SHARE),
      copied AS (INSERT INTO ${ident(shadowOf(table))} (${copied.names.join(', ')}) SELECT ${copied.values.join(', ')} FROM batch ON CONFLICT DO NOTHING RETURNING 1)${claim ? `,
      claimed AS (${claim})` : ''}
    SELECT (SELECT count(*) FROM batch)::int AS read, (SELECT count(*) FROM copied)::int AS written,
           (SELECT ARRAY[${primary.map((c) => `${ident(c.name)}::text`).join(', ')}] FROM batch ORDER BY ${primary.map((c) => `${ident(c.name)} DESC`).join(', ')} LIMIT 1) AS last`;
  return {
    first: statement(''),
    after: statement(`WHERE (${key}) > (${primary.map((c, i) => `$${i + 1}::${c.type}`).join(', ')})`),
  };
}

/**
 * Undoes a preparation (its triggers, copies and progress): the migration then copies offline, as without one. Refused
 * once a migration ahead of a swap ran without the statements the copy holds (the old table lacks them then).
 */
export async function abandon(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    for (const { table, ahead } of TABLES) {
      if (!ahead) continue;
      const { rows: [state] } = await client.query<{ ahead: boolean }>(
        `SELECT to_regclass($1) IS NOT NULL AND EXISTS (SELECT 1 FROM "_prisma_migrations" WHERE migration_name = $2 AND rolled_back_at IS NULL) AS ahead`,
        [shadowOf(table), ahead.migration],
      );
      if (state!.ahead) throw new Error(`${ahead.migration} was applied over the prepared ${table}, which the migrations still to run swap in: finish with \`npm run migrate\``);
    }
    await client.query('BEGIN');
    for (const { table, claims } of TABLES) {
      await client.query(`DROP TRIGGER IF EXISTS ${ident(mirrorOf(table))} ON ${ident(table)}`);
      await client.query(`DROP FUNCTION IF EXISTS ${ident(mirrorOf(table))}()`);
      await client.query(`DROP TABLE IF EXISTS ${ident(shadowOf(table))}`);
      if (claims) await client.query(`DROP TABLE IF EXISTS ${ident(shadowOf(claims.table))}`);
    }
    await client.query(`DROP TABLE IF EXISTS ${ident(PROGRESS)}`);
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}
