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
  subscribe: { mutate: ['apps/core/src/subscribers/machine.ts'], tests: ['lists/subscriber-machine', 'lists/subscribers', 'lists/suppress', 'lists/become-active', 'lists/limit'] },
  // "becomes active", written once (activate.ts, and its SQL in repository.ts), against the test of every path to it
  // (the count, the welcome series, the ledger, the event): no test that waits for real time is needed. Equivalent:
  // recordActivation's statement name 'record-activation' -> '' (a name only lets Postgres keep the plan; inside a
  // Prisma transaction, rawQuery does not use it)
  'subscribe-series': {
    mutate: ['apps/core/src/subscribers/activate.ts', 'apps/core/src/subscribers/repository.ts:22-58'],
    tests: ['lists/become-active'],
  },
  'oauth-tokens': { mutate: ['apps/core/src/oauth/tokens.ts'], tests: ['oauth/tokens'] },
  // outreach/repository/ by its files, each against the tests that drive it (the SQL whole against all of them ran
  // each mutant through a dozen slow files)
  'outreach-sql': {
    mutate: ['apps/core/src/outreach/repository/slots.ts', 'apps/core/src/outreach/repository/claim-due.ts', 'apps/core/src/outreach/repository/rotation.ts'],
    tests: ['outreach/rotation-rules', 'outreach/limits', 'outreach/scheduler', 'outreach/rotation'],
  },
  'outreach-sql-prospects': {
    mutate: ['apps/core/src/outreach/repository/prospects.ts'],
    tests: ['outreach/engine', 'outreach/state', 'outreach/api', 'outreach/opt-out', 'outreach/prospect-pages', 'outreach/sequence-end'],
  },
  'outreach-sql-counts': {
    mutate: ['apps/core/src/outreach/repository/stats.ts', 'apps/core/src/outreach/repository/windows.ts', 'apps/core/src/outreach/repository/verdicts.ts'],
    tests: ['outreach/stats', 'outreach/auto-pause', 'outreach/pause-windows'],
  },
  'outreach-sql-paths': {
    mutate: ['apps/core/src/outreach/repository/paths.ts', 'apps/core/src/outreach/repository/held.ts'],
    tests: ['outreach/branches', 'outreach/ab-test', 'outreach/windows'],
  },
  signing: { mutate: ['apps/core/src/domains/sending.ts'], tests: ['domains/dkim', 'domains/smtp-from', 'domains/required', 'domains/settings', 'domains/send-rules', 'broadcasts/dkim'] },
  // SIGNED_HEADERS is a module-level constant: its mutants are static (each runs every test of its group), so they run
  // here by its lines, against the signer's own test
  'signed-headers': { mutate: ['apps/core/src/domains/sending.ts:254-257'], tests: ['domains/dkim'], ignoreStatic: false },
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
  // a mutant that takes this long over its tests' own time (x timeoutFactor) counts as killed: on a host at a load of 20 the
  // tests alone ran 2-3 times their dry-run time, and 15 s let slow runs pass as kills
  timeoutMS: 60_000,
  timeoutFactor: 3,
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
      // a test's own 30 s is too short for the dry run on a loaded host (the auto-pause test of 24 prospects, four
      // delivery orders, took longer under a load of 30); each mutant's limit is Stryker's (timeoutMS)
      testTimeout: 120_000,
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
