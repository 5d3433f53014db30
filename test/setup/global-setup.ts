import crypto from 'node:crypto';
import { migrate } from '../../apps/core/src/migrate';
import { databaseUrl, templateDatabase } from './shared';

/** Once per run: a migrated template database that every test file copies. */
export default async function globalSetup(): Promise<void> {
  const run = `${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
  process.env.MS_TEST_RUN = run;
  await migrate(databaseUrl(templateDatabase(run)));
}
