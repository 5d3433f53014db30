import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateIfStale } from '../../scripts/generate';

/**
 * The Prisma client is generated again exactly when schema.prisma changed since its stamp, in the process that needs it
 * (scripts/fresh-client.ts): `npm run admin` after a pull that changed the schema loads a client that matches it.
 */
const root = path.resolve(__dirname, '../..');
let project: string;

beforeAll(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-generate-'));
  fs.mkdirSync(path.join(project, 'prisma'));
  fs.copyFileSync(path.join(root, 'prisma/schema.prisma'), path.join(project, 'prisma/schema.prisma'));
});
afterAll(() => fs.rmSync(project, { recursive: true, force: true }));

it('generates a missing client, skips a fresh one, and generates again once the schema changes', () => {
  const client = path.join(project, 'generated/prisma/client.ts');
  expect(generateIfStale({ root: project })).toBe(true);
  expect(fs.readFileSync(client, 'utf8')).toContain('PrismaClient');
  const written = fs.statSync(client).mtimeMs;

  expect(generateIfStale({ root: project })).toBe(false);
  expect(fs.statSync(client).mtimeMs).toBe(written);

  fs.appendFileSync(path.join(project, 'prisma/schema.prisma'), '\nmodel Probe {\n  id Int @id\n}\n');
  expect(generateIfStale({ root: project })).toBe(true);
  expect(fs.readFileSync(path.join(project, 'generated/prisma/models.ts'), 'utf8')).toContain('Probe');
}, 60_000);

it('a copy without a schema beside it (dist/scripts) generates nothing', () => {
  expect(generateIfStale({ root: path.join(project, 'nowhere') })).toBe(false);
});

it('the admin CLI checks before anything it imports loads the client', () => {
  const imports = [...fs.readFileSync(path.join(root, 'scripts/admin.ts'), 'utf8').matchAll(/^import .*$/gm)].map((m) => m[0]);
  expect(imports[0]).toBe("import './fresh-client';");
  expect(fs.readFileSync(path.join(root, 'scripts/fresh-client.ts'), 'utf8')).toMatch(/^generateIfStale\(\);$/m);
  expect(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.admin).toBe('tsx scripts/admin.ts');
});
