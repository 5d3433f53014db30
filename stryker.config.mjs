/**
 * `npm run mutate` (docs/DEVELOPERS.md, "Mutation testing"): Stryker over the import, stop-list, bounce-policy and
 * auto-pause rules, the subscriber machine, OAuth token refresh, outreach SQL and domain signing, one group of files at
 * a time (MUTATE_GROUP), each against the tests that cover it, so that a mutant runs only those files (a run is
 * minutes, not an hour, on a small host).
 */
const GROUPS = {
  parse: { mutate: ['apps/core/src/imports/parse.ts'], tests: ['lists/import-parse'] },
  imports: { mutate: ['apps/core/src/imports/**/*.ts', '!apps/core/src/imports/parse.ts'], tests: ['lists/import-store', 'lists/import-apply'] },
  'stop-list': { mutate: ['apps/core/src/stop-list/**/*.ts'], tests: ['lists/stop-list-entries', 'lists/stop-list-rule'] },
  bounce: { mutate: ['apps/core/src/inbound/bounce-policy.ts'], tests: ['inbound/bounce-policy', 'inbound/verp'] },
  pause: { mutate: ['apps/core/src/outreach/auto-pause.ts'], tests: ['outreach/auto-pause'] },
  subscribe: { mutate: ['apps/core/src/subscribers/machine.ts'], tests: ['lists/subscribers', 'lists/confirm', 'lists/suppress', 'lists/limit', 'lifecycle/series'] },
  'oauth-tokens': { mutate: ['apps/core/src/oauth/tokens.ts'], tests: ['oauth/mailbox-oauth'] },
  'outreach-sql': {
    mutate: ['apps/core/src/outreach/repository.ts'],
    tests: ['outreach/rotation-rules', 'outreach/rotation', 'outreach/auto-pause', 'outreach/scheduler', 'outreach/engine', 'outreach/state', 'outreach/stats', 'outreach/api', 'outreach/prospect-pages', 'outreach/limits', 'outreach/opt-out', 'outreach/sequence'],
  },
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
