import fs from 'node:fs';
import path from 'node:path';

/**
 * The worker's processors take their database handle as everything else in the process does: main.ts reads `db()`
 * once and hands it down (createWorkers, startMaintenance, the dispatcher, the inbound reader); no other file of
 * apps/worker imports the global handle, so a processor cannot run on one db while its worker was given another.
 */
const WORKER = path.join(__dirname, '..', '..', 'apps', 'worker', 'src');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sources(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The names a file imports as values (not `import type`) from apps/core/src/db.ts. */
function valuesFromDb(text: string): string[] {
  return [...text.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s+from\s+'[./]*core\/src\/db'/g)]
    .filter((m) => !m[1])
    .flatMap((m) => m[2]!.split(',').map((name) => name.trim()).filter((name) => name && !name.startsWith('type ')));
}

describe("the worker's database handle", () => {
  it('is read once, in main.ts', () => {
    const main = fs.readFileSync(path.join(WORKER, 'main.ts'), 'utf8');
    expect(main.match(/\bdb\(\)/g)).toHaveLength(1);
  });

  it('is handed to every other file of apps/worker, none imports the global one', () => {
    const importing = sources(WORKER)
      .filter((file) => path.basename(file) !== 'main.ts')
      .filter((file) => valuesFromDb(fs.readFileSync(file, 'utf8')).includes('db'))
      .map((file) => path.relative(WORKER, file));
    expect(importing).toEqual([]);
  });

  it('reads an import of the global handle as one, and a type-only import as none', () => {
    expect(valuesFromDb("import { db } from '../../../core/src/db';")).toEqual(['db']);
    expect(valuesFromDb("import { rawQuery, db } from '../../core/src/db';")).toEqual(['rawQuery', 'db']);
    expect(valuesFromDb("import type { Db } from '../../../core/src/db';")).toEqual([]);
    expect(valuesFromDb("import { type Db } from '../../core/src/db';")).toEqual([]);
  });
});
