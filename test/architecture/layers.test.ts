import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Violation } from '../../scripts/deps';

/**
 * The layers of apps/core/src, the folder circles and the apps' imports, checked by dependency-cruiser with the
 * project's .dependency-cruiser.cjs, through its API, as `npm run deps` runs it (scripts/deps.ts).
 * The repository must show no violation beyond .dependency-cruiser-known-violations.json; a fixture tree with one of
 * each wrong import shows the rules report them.
 */
const ROOT = path.join(__dirname, '..', '..');
const KNOWN = path.join(ROOT, '.dependency-cruiser-known-violations.json');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { floors } = require(path.join(ROOT, '.dependency-cruiser.cjs')) as { floors: { name: string; folders: string[] }[] };

const FIXTURE = path.join(ROOT, 'test/fixtures/layers');

function deps(...args: string[]): string {
  return execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/deps.ts'), ...args], { cwd: ROOT, encoding: 'utf8' });
}

/** The violations not in the known list (the repository's, or `known`). */
function cruise(baseDir: string, known?: string): Violation[] {
  return JSON.parse(deps('--json', '--base', baseDir, ...(known ? ['--known', known] : []))) as Violation[];
}

/** A known list that lists nothing, so every violation is reported. */
function nothingKnown(): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'layers-')), 'known.json');
  fs.writeFileSync(file, '[]');
  return file;
}

const shown = (v: Violation) => `${v.rule}: ${v.from} -> ${v.to}${v.cycle ? ` (circle: ${v.cycle.join(' -> ')})` : ''}`;

describe('dependencies point one way', () => {
  it('finds no violation in apps/ beyond the known ones', () => {
    expect(cruise(ROOT, KNOWN).map(shown)).toEqual([]);
  }, 120_000);

  it('places every folder of apps/core/src on exactly one floor', () => {
    const placed = floors.flatMap((f) => f.folders);
    const folders = fs.readdirSync(path.join(ROOT, 'apps/core/src'), { withFileTypes: true })
      .filter((e) => e.isDirectory()).map((e) => e.name).sort();
    expect([...placed].sort()).toEqual(folders);
    expect(new Set(placed).size).toBe(placed.length);
  });

  it("docs/DEVELOPERS.md's Layout draws the floors the configuration states", () => {
    const folders = new Set(fs.readdirSync(path.join(ROOT, 'apps/core/src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name));
    const guide = fs.readFileSync(path.join(ROOT, 'docs/DEVELOPERS.md'), 'utf8');
    const drawing = /stand on four floors[\s\S]*?```text\n([\s\S]*?)```/.exec(guide)?.[1] ?? '';
    const drawn = new Map<string, string[]>();
    let floor: string | undefined;
    for (const line of drawing.split('\n')) {
      const first = line.trim().split(/\s+/)[0] ?? '';
      if (floors.some((f) => f.name === first)) drawn.set((floor = first), []);
      else if (!/^\s{4,}\S/.test(line) || /^[|v\s]*$/.test(line)) continue;
      if (floor) drawn.get(floor)!.push(...line.split(/[\s,]+/).filter((word) => folders.has(word)));
    }
    expect(Object.fromEntries([...drawn].map(([name, list]) => [name, [...list].sort()]))).toEqual(Object.fromEntries(floors.map((f) => [f.name, [...f.folders].sort()])));
  });

  it('reports an import up, a folder circle, a file circle, an app importing an app and an unplaced folder', () => {
    const found = cruise(FIXTURE, nothingKnown()).map((v) => `${v.rule}: ${v.from} -> ${v.to}`);
    expect(found.sort()).toEqual([
      'no-app-imports-another-app: apps/api/src/server.ts -> apps/worker/src/main.ts',
      'no-app-imports-another-app: apps/core/src/db.ts -> apps/api/src/server.ts',
      'no-folder-cycle: apps/core/src/broadcasts -> apps/core/src/preferences',
      'no-folder-cycle: apps/core/src/lifecycle -> apps/core/src/broadcasts',
      'no-folder-cycle: apps/core/src/preferences -> apps/core/src/lifecycle',
      'no-folder-cycle: apps/core/src/sandbox -> apps/core/src/sending',
      'no-folder-cycle: apps/core/src/sending -> apps/core/src/sandbox',
      'no-import-up-from-foundation: apps/core/src/events/index.ts -> apps/core/src/delivery/outbox.ts',
      'no-module-cycle: apps/core/src/topics/a.ts -> apps/core/src/topics/b.ts',
      'no-unplaced-folder: apps/core/src/newthing/index.ts -> apps/core/src/db.ts',
    ]);
  }, 120_000);

  it('reports a new violation that the known ones do not cover', () => {
    const known = nothingKnown();
    deps('--baseline', '--base', FIXTURE, '--known', known);
    const baseline = JSON.parse(fs.readFileSync(known, 'utf8')) as { rule: { name: string } }[];
    expect(baseline).toHaveLength(10);
    expect(cruise(FIXTURE, known)).toEqual([]);
    // every violation of the fixture is known but the import up, which is reported as new
    fs.writeFileSync(known, JSON.stringify(baseline.filter((v) => v.rule.name !== 'no-import-up-from-foundation')));
    expect(cruise(FIXTURE, known).map(shown)).toEqual([
      'no-import-up-from-foundation: apps/core/src/events/index.ts -> apps/core/src/delivery/outbox.ts',
    ]);
  }, 120_000);
});
