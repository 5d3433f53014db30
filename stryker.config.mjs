/**
 * `npm run mutate` (docs/DEVELOPERS.md, "Mutation testing"): Stryker over the import, stop-list, bounce-policy and
 * auto-pause rules, the subscriber machine, OAuth token refresh, outreach SQL and domain signing, one group of files at
 * a time (MUTATE_GROUP), each against the tests that cover it, so that a mutant runs only those files (a run is
 * minutes, not an hour, on a small host).
 */
const GROUPS = {
  parse: { mutate: ['apps/core/src/imports/parse.ts', 'apps/core/src/imports/csv.ts'], tests: ['lists/import-parse'] },
  imports: { mutate: ['apps/core/src/imports/**/*.ts', '!apps/core/src/imports/parse.ts', '!apps/core/src/imports/csv.ts'], tests: ['lists/import-store', 'lists/import-apply'] },
  'stop-list': { mutate: ['apps/core/src/stop-list/**/*.ts'], tests: ['lists/stop-list-entries', 'lists/stop-list-rule'] },
  bounce: { mutate: ['apps/core/src/inbound/bounce-policy.ts'], tests: ['inbound/bounce-policy', 'inbound/verp'] },
  pause: { mutate: ['apps/core/src/outreach/auto-pause.ts'], tests: ['outreach/auto-pause'] },
  subscribe: { mutate: ['apps/core/src/subscribers/machine.ts'], tests: ['lists/subscriber-machine', 'lists/subscribers', 'lists/suppress'] },
  // the welcome series' tests wait for real time and cover every add: they run only on a pending person added again
  // as confirmed (the series started, its event's status), which no test of lists/ holds
  'subscribe-series': { mutate: ['apps/core/src/subscribers/machine.ts:162-170'], tests: ['lifecycle/series'] },
  'oauth-tokens': { mutate: ['apps/core/src/oauth/tokens.ts'], tests: ['oauth/tokens'] },
  // outreach/repository.ts by its parts, each against the tests that drive that part (the file whole against all of
  // them ran each mutant through a dozen slow files)
  'outreach-sql': { mutate: ['apps/core/src/outreach/repository.ts:1-276'], tests: ['outreach/rotation-rules', 'outreach/limits', 'outreach/scheduler', 'outreach/rotation'] },
  'outreach-sql-prospects': {
    mutate: ['apps/core/src/outreach/repository.ts:277-464'],
    tests: ['outreach/engine', 'outreach/state', 'outreach/api', 'outreach/opt-out', 'outreach/prospect-pages'],
  },
  'outreach-sql-counts': { mutate: ['apps/core/src/outreach/repository.ts:465-702'], tests: ['outreach/stats', 'outreach/auto-pause'] },
  'outreach-sql-paths': { mutate: ['apps/core/src/outreach/repository.ts:703-848'], tests: ['outreach/branches', 'outreach/ab-test'] },
  signing: { mutate: ['apps/core/src/domains/sending.ts'], tests: ['domains/dkim', 'domains/smtp-from', 'domains/required', 'domains/settings', 'domains/send-rules'] },
  // SIGNED_HEADERS is a module-level constant: its mutants are static (each runs every test of its group), so they run
  // here by its lines, against the signer's own test
  'signed-headers': { mutate: ['apps/core/src/domains/sending.ts:153-156'], tests: ['domains/dkim'], ignoreStatic: false },
};
const name = process.env.MUTATE_GROUP ?? '';
const group = GROUPS[name];
if (!group) throw new Error(`MUTATE_GROUP must be one of ${Object.keys(GROUPS).join(', ')} (npm run mutate runs them all)`);

export default {
  packageManager: 'npm',
  testRunner: 'jest',
  coverageAnalysis: 'perTest',
  // two jest runners; the TypeScript checker (installed: add --checkers typescript --tsconfigFile tsconfig.json) doubles the time here
  concurrency: 2,
  timeoutMS: 15_000,
  // the first run of a group's tests, with coverage, on a loaded 2-core host
  dryRunTimeoutMinutes: 30,
  ignoreStatic: group.ignoreStatic ?? true,
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  mutate: group.mutate,
  jest: {
    projectType: 'custom',
    configFile: 'jest.config.ts',
    enableFindRelatedTests: false,
    config: {
      testMatch: group.tests.map((t) => `**/test/${t}.test.ts`),
      // the template database is migrated once per runner process, not once per mutant
      globalSetup: '<rootDir>/test/setup/mutation-global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/mutation-global-teardown.ts',
    },
  },
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
