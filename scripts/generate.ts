/**
 * `prisma generate`, skipped when generated/ already matches schema.prisma.
 * Prisma's CLI wants a schema-engine binary it downloads from a host that may be unreachable; generate never runs it,
 * so any existing file satisfies the check (docs/DEVELOPERS.md).
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Generates the client of the project at `root` unless its stamp matches schema.prisma (or `force`); true when it did.
 * A compiled copy of this file (dist/scripts) finds no schema beside it and does nothing: the build generated the
 * client it ships with.
 */
export function generateIfStale({ root = path.resolve(__dirname, '..'), force = false }: { root?: string; force?: boolean } = {}): boolean {
  const schemaFile = path.join(root, 'prisma/schema.prisma');
  if (!fs.existsSync(schemaFile)) return false;
  const stamp = path.join(root, 'generated/prisma/.schema-sha256');
  const digest = crypto.createHash('sha256').update(fs.readFileSync(schemaFile)).digest('hex');
  if (!force && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) return false;

  const result = spawnSync(process.execPath, [require.resolve('prisma/build/index.js'), 'generate'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', ...process.env },
  });
  if (result.status !== 0) {
    process.stderr.write('prisma generate failed\n');
    process.exit(result.status ?? 1);
  }
  fs.writeFileSync(stamp, digest);
  return true;
}

if (require.main === module) generateIfStale({ force: process.argv.includes('--force') });
