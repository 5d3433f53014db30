/**
 * `npm run build` (and the first step of `npm start`): generate the Prisma client, then compile to an empty dist/. A
 * file the sources no longer hold must not survive in dist/: a stale `routes/admin.js` beside a newer `routes/admin/`
 * folder is what `require('./routes/admin')` would load.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..');
const run = (args: string[]) => {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

run([require.resolve('tsx/cli'), path.join(root, 'scripts/generate.ts')]);
fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
run([require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')]);
