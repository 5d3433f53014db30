import { Redis } from 'ioredis';
import { Client } from 'pg';

/** Names shared by the global setup, each test file's setup and the teardown. */
export const SERVER_URL = process.env.TEST_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';

export const databaseUrl = (name: string) => `${SERVER_URL}/${name}`;

/** Every database and Redis key of one `npm test` run starts with this, so runs never collide. */
export function runId(): string {
  const id = process.env.MS_TEST_RUN;
  if (!id) throw new Error('MS_TEST_RUN is not set: run the tests through jest (globalSetup sets it)');
  return id;
}

export const templateDatabase = (run: string) => `ms_test_${run}_template`;

/**
 * Drops every database named `ms_test_<run>...` and every Redis key `mstest:<run>...` for a run id prefix (`<run>_`
 * and `<run>:` for one run, `mut` for every mutation run), including what a crashed test file left behind.
 */
export async function dropRunData(databasePrefix: string, keyPrefix: string): Promise<void> {
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  try {
    const like = `ms\\_test\\_${databasePrefix.replace(/[\\_%]/g, (c) => `\\${c}`)}%`;
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [like]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `mstest:${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
