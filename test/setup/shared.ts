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
