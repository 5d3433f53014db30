import { dropRunData, runId } from './shared';

/** Drops every database and Redis key of this run, including what a crashed test file left behind. */
export default async function globalTeardown(): Promise<void> {
  const run = runId();
  await dropRunData(`${run}_`, `${run}:`);
}
