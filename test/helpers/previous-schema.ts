import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS_DIR, migrate } from '../../apps/core/src/migrate';
import { databaseUrl } from '../setup/shared';

/**
 * A database of this test file migrated up to (not including) `migration`: an installation filled by the previous
 * schema, for the tests of an upgrade. Made before the file's tests and dropped after them; `url` is set by then.
 */
export function usePreviousSchema(migration: string, suffix: string): { url: string } {
  const name = `${process.env.MS_TEST_DATABASE}_${suffix}`;
  const handle = { url: databaseUrl(name) };
  let previous: string;
  beforeAll(async () => {
    previous = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-previous-schema-'));
    for (const dir of fs.readdirSync(MIGRATIONS_DIR)) {
      if (dir < migration) fs.cpSync(path.join(MIGRATIONS_DIR, dir), path.join(previous, dir), { recursive: true });
    }
    await migrate(handle.url, previous);
  }, 120_000);
  afterAll(async () => {
    fs.rmSync(previous, { recursive: true, force: true });
    const admin = new Client({ connectionString: databaseUrl('postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }, 120_000);
  return handle;
}
