import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { writableUrl } from './failover';
import { preparedSwap } from './upgrade/swap';

/**
 * Applies prisma/migrations/<name>/migration.sql in order and records each in `_prisma_migrations` exactly as
 * `prisma migrate deploy` does (same table, checksum = SHA-256 of the file, same advisory lock key), so either
 * tool can take over from the other. Why not Prisma's own: docs/DEVELOPERS.md.
 */
/** The project root: the nearest folder above this file with a package.json (sources run from apps/, builds from dist/apps/). */
function projectRoot(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const MIGRATIONS_DIR = path.join(projectRoot(), 'prisma/migrations');

// Prisma Migrate's advisory lock key: holding the same one keeps our runner and Prisma's from racing too.
const ADVISORY_LOCK_KEY = 72707369;

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: crypto.createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * A client whose connection dropped under it (the server killed, a failover) rejects the query it was running; without
 * a listener, node-postgres also emits 'error', which would end the whole process instead of the migration's attempt.
 */
function quiet(client: Client): Client {
  client.on('error', () => undefined);
  return client;
}

/**
 * Creates the database named in the URL when it does not exist. The target is tried first (a role may be allowed
 * there only); the server's `postgres` database is used only when the target is missing, to create it.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const target = quiet(new Client({ connectionString: databaseUrl }));
  try {
    await target.connect();
    await target.end();
    return false;
  } catch (err) {
    await target.end().catch(() => undefined);
    // 3D000 invalid_catalog_name: the database does not exist yet; anything else is the caller's to see
    if ((err as { code?: string }).code !== '3D000') throw err;
  }
  url.pathname = '/postgres';
  const admin = quiet(new Client({ connectionString: url.toString() }));
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    } catch (err) {
      // 42P04 duplicate_database / 23505: another process created it at the same moment
      const code = (err as { code?: string }).code;
      if (code !== '42P04' && code !== '23505') throw err;
      return false;
    }
    return true;
  } finally {
    await admin.end();
  }
}

export interface MigrateResult {
  created: boolean;
  applied: string[];
}

export async function migrate(url: string, dir = MIGRATIONS_DIR): Promise<MigrateResult> {
  // a URL with several hosts: the one that accepts writes (failover/)
  const databaseUrl = await writableUrl(url);
  const created = await ensureDatabase(databaseUrl);
  const client = quiet(new Client({ connectionString: databaseUrl }));
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCK_KEY]);
    await client.query(MIGRATIONS_TABLE);
    const done = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const byName = new Map(done.rows.map((row) => [row.migration_name, row]));
    for (const migration of readMigrations(dir)) {
      const previous = byName.get(migration.name);
      if (previous?.finished_at) {
        if (previous.checksum !== migration.checksum) {
          throw new Error(`migration ${migration.name} was changed after it was applied`);
        }
        continue;
      }
      if (previous) throw new Error(`migration ${migration.name} failed earlier; resolve it before migrating again`);
      // the time partitions prepared online (npm run partitions:prepare) are swapped in instead of copied
      const swap = await preparedSwap(client, migration);
      const id = crypto.randomUUID();
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
        [id, migration.checksum, migration.name],
      );
      try {
        await client.query('BEGIN');
        if (swap) await swap();
        else await client.query(migration.sql);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        await client.query('UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1', [id, String(err)]);
        throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`);
      }
      await client.query(
        'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
        [id],
      );
      applied.push(migration.name);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return { created, applied };
}
