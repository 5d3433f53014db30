import crypto from 'node:crypto';
import { migrate } from '../../apps/core/src/migrate';
import { databaseUrl, templateDatabase } from './shared';

/**
 * Stryker's jest runs (stryker.config.json): a test runner process runs jest once per mutant, so the migrated template
 * database is made once per process, not once per mutant. Its run id starts with `mut`, so `npm run mutate` can drop
 * what the runs left (test/setup/mutation-cleanup.ts).
 */
export default async function mutationGlobalSetup(): Promise<void> {
  if (process.env.MS_TEST_RUN?.startsWith('mut')) return;
  const run = `mut${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
  process.env.MS_TEST_RUN = run;
  await migrate(databaseUrl(templateDatabase(run)));
}
