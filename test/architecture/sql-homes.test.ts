import fs from 'node:fs';
import path from 'node:path';

/**
 * One home for SQL: each domain's statements live in its `repository.ts` (apps/core/src/<domain>/repository.ts), or
 * when they outgrow one file in its `repository/` folder, split by what they do (outreach/repository/);
 * nothing else in apps/ writes SQL. db.ts (which runs statements), migrate.ts (which applies the migrations) and the
 * online upgrade's folder (upgrade/: the schema change migrate.ts swaps in, DDL over the catalog like a migration's) are
 * the exceptions. docs/DEVELOPERS.md says how the code is laid out.
 */
const ROOT = path.join(__dirname, '..', '..');
const EXCEPTIONS = new Set(['apps/core/src/db.ts', 'apps/core/src/migrate.ts']);

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The file without its comments (line comments, and block comments' lines), so prose about SQL does not count. */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .map((line) => line.replace(/(^|[\s;,{}()])\/\/.*$/, '$1'))
    .join('\n');
}

/** What marks SQL: a statement's keywords (our SQL is upper case) or a call that runs SQL text. */
const SQL = [
  /\bSELECT\b[\s\S]{0,400}?\bFROM\b/,
  /\bINSERT INTO\b/,
  /\bUPDATE\s+"?\w+"?\s+(?:\w+\s+)?SET\b/,
  /\bDELETE FROM\b/,
  /\bON CONFLICT\b/,
  /\brawQuery\s*(?:<[^>]*>)?\s*\(/,
  /\$(?:queryRaw|executeRaw)(?:Unsafe)?\b/,
  /\bPrisma\.(?:sql|raw)\b/,
  /\b(?:pool|client|pg)\.query\s*\(/,
];

function sqlOutsideRepositories(root = ROOT): { file: string; pattern: string }[] {
  const found: { file: string; pattern: string }[] = [];
  for (const file of sources(path.join(root, 'apps'))) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    if (EXCEPTIONS.has(rel) || /^apps\/core\/src\/upgrade\/[\w-]+\.ts$/.test(rel)) continue;
    if (/^apps\/core\/src\/[\w-]+\/repository(?:\.ts|\/[\w-]+\.ts)$/.test(rel)) continue;
    const text = code(fs.readFileSync(file, 'utf8'));
    for (const pattern of SQL) if (pattern.test(text)) found.push({ file: rel, pattern: pattern.source });
  }
  return found.sort((a, b) => a.file.localeCompare(b.file));
}

describe('one home for SQL', () => {
  it('no file of apps/ but a domain repository (and db.ts, migrate.ts, upgrade/) writes or runs SQL', () => {
    expect(sqlOutsideRepositories()).toEqual([]);
  });

  it('each repository is a domain folder of apps/core/src', () => {
    const repositories = sources(path.join(ROOT, 'apps')).filter((f) => path.basename(f) === 'repository.ts');
    expect(repositories.length).toBeGreaterThan(5);
    for (const file of repositories) expect(path.relative(ROOT, file).split(path.sep).join('/')).toMatch(/^apps\/core\/src\/[\w-]+\/repository\.ts$/);
  });

  it('finds SQL where it is written (the check itself works)', () => {
    const root = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'sql-homes-'));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    try {
      write('apps/core/src/sending/accept.ts', 'export const q = `SELECT id\n FROM messages WHERE id = $1`;\n');
      write('apps/core/src/sending/repository.ts', 'export const q = `SELECT id FROM messages`;\n');
      write('apps/api/src/routes/send.ts', '// SELECT what FROM prose, in a comment\nawait rawQuery(db, q);\n');
      write('apps/api/src/console/page.ts', '/* UPDATE messages SET nothing */ export const html = "<select>from</select>";\n');
      expect(sqlOutsideRepositories(root)).toEqual([
        { file: 'apps/api/src/routes/send.ts', pattern: SQL[5]!.source },
        { file: 'apps/core/src/sending/accept.ts', pattern: SQL[0]!.source },
      ]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
