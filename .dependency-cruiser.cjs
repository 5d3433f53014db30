// The folders of apps/core/src stand on floors; an import points to its own floor or one below, never up, and no
// two folders import each other (directly or round a longer circle). The apps import apps/core, never each other,
// and apps/core imports no app. `npm run deps` checks this; test/architecture/layers.test.ts runs the same check in
// `npm test`. Today's known violations are in .dependency-cruiser-known-violations.json (docs/DEVELOPERS.md, Layout).

/** Bottom to top. A folder not listed here fails test/architecture/layers.test.ts. */
const floors = [
  {
    name: 'foundation',
    comment: 'what every part uses: the files at the top of apps/core/src and the small shared folders',
    folders: ['audit', 'consent', 'events', 'experiments', 'failover', 'health', 'housekeeping', 'idempotency',
      'ids', 'ip', 'outbound', 'replicas', 'topics', 'upgrade'],
  },
  {
    name: 'resources',
    comment: 'the things the service keeps, and the outbox and transport that send a message',
    folders: ['accounts', 'analytics', 'auth', 'delivery', 'domains', 'mailboxes', 'metrics', 'oauth', 'partitions',
      'second-factor', 'sso', 'stop-list', 'subscriber-links', 'teams', 'templates', 'tracking-domains', 'verify', 'webhooks'],
  },
  {
    name: 'flows',
    comment: 'what combines resources: accepting a send, lists and subscribers, broadcasts, sequences, inbound mail',
    folders: ['archive', 'batches', 'broadcasts', 'imports', 'inbound', 'lifecycle', 'links', 'mailbox-settings',
      'outreach', 'preferences', 'sandbox', 'sending', 'subscribers', 'suppressions'],
  },
  {
    name: 'edges',
    comment: 'what meets the outside or runs over everything: the MX and submission servers, the operator, recovery, the list of email kinds',
    folders: ['changes', 'email-kinds', 'mx', 'operator', 'recovery', 'retention', 'submission'],
  },
];

const core = '^apps/core/src/';
const foldersOf = (list) => `${core}(?:${list.join('|')})/`;
const floorPath = (floor, index) =>
  index === 0 ? `${core}(?:[^/]+\\.ts$|(?:${floor.folders.join('|')})/)` : foldersOf(floor.folders);

const upward = floors.slice(0, -1).map((floor, index) => ({
  name: `no-import-up-from-${floor.name}`,
  comment: `${floor.name} imports only from its own floor or below (floors, bottom to top: ${floors.map((f) => f.name).join(' -> ')})`,
  severity: 'error',
  from: { path: floorPath(floor, index) },
  to: { path: foldersOf(floors.slice(index + 1).flatMap((f) => f.folders)) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-unplaced-folder',
      comment: 'every folder of apps/core/src stands on a floor of .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: `${core}[^/]+/`, pathNot: foldersOf(floors.flatMap((f) => f.folders)) },
      to: {},
    },
    {
      name: 'no-folder-cycle',
      comment: 'two folders never import each other, directly or round a longer circle',
      severity: 'error',
      scope: 'folder',
      from: { path: `${core}[^/]+$` },
      to: { path: `${core}[^/]+$`, circular: true },
    },
    {
      name: 'no-module-cycle',
      comment: 'no import circle between files, type-only imports included',
      severity: 'error',
      from: { path: '^apps/' },
      to: { circular: true },
    },
    {
      name: 'no-app-imports-another-app',
      comment: 'the apps (api, worker, smtp, mx) import apps/core and never each other; apps/core imports no app',
      severity: 'error',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/', pathNot: ['^apps/$1/', '^apps/core/'] },
    },
  ],
  options: {
    includeOnly: '^apps/',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    combinedDependencies: false,
  },
};

// The floors, for test/architecture/layers.test.ts and the Layout in docs/DEVELOPERS.md; not enumerable, because
// dependency-cruiser refuses a configuration with keys of its own.
Object.defineProperty(module.exports, 'floors', { value: floors, enumerable: false });
