import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkComments, checkMarkdown, checkRepository, codeFiles, comments, Repository, slugs } from './citations';

/**
 * The guides cite only what the repository holds: every .md file's links, anchors, backticked and bare paths and
 * quoted sections, and the code comments' citations of guides and paths. A citation of a document kept elsewhere (a
 * design, a specification, an issue tracker's numbers) is refused: nobody reading the repository can follow it.
 */
const ROOT = path.join(__dirname, '..', '..');

function scratch(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'citations-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

describe('citations', () => {
  it('every guide of the repository cites only files, folders and headings it holds, and nothing kept elsewhere', () => {
    const repo = new Repository(ROOT);
    expect(repo.markdown()).toEqual(expect.arrayContaining(['README.md', 'bench/README.md', 'docs/DEVELOPERS.md', 'docs/api.md']));
    expect(repo.markdown().some((f) => f.startsWith('node_modules/') || f.startsWith('generated/') || f.startsWith('dist/'))).toBe(false);
    expect(repo.markdown().flatMap((f) => checkMarkdown(repo, f))).toEqual([]);
  });

  it("the code's comments cite only guides, sections and paths the repository holds", () => {
    const repo = new Repository(ROOT);
    expect(codeFiles(repo)).toEqual(expect.arrayContaining(['apps/api/src/server.ts', 'apps/worker/src/main.ts', 'scripts/admin.ts']));
    expect(codeFiles(repo).flatMap((f) => checkComments(repo, f))).toEqual([]);
  });

  it('finds each kind of citation the repository cannot answer (the check itself works)', () => {
    const root = scratch({
      '.gitignore': 'bench/results.json\n.state/\n',
      'README.md': [
        '# Service',
        'See [the guide](docs/guide.md), [its part](docs/guide.md#the-part), [a folder](docs/), [a site](https://example.com/x) and [apps/elsewhere#4](https://example.com/apps/elsewhere).',
        'Broken: [gone](docs/gone.md), [no such part](docs/guide.md#nowhere), [here](#nothing-here).',
        'Paths: `apps/core/src/real.ts`, `apps/core/src/gone.ts`, `apps/core/src/{real,other}.ts`, `test/x/*.test.ts`,',
        '`core/src/real.ts`, `core/src/missing.ts`, `apps/core/src/<domain>/repository.ts`, `bench/results.json`,',
        '`.state/secrets.json`, `text/csv`, `maildir/bsd`; bare docs/guide.md and docs/lost.md.',
        'Sections: docs/guide.md, "The part" holds; docs/guide.md, "Imaginary" does not; docs/guide.md ("Numbers") does.',
        'Elsewhere: DESIGN section 5, the spec\'s limits, § 4.2, ../shared/spec, issue 18, issues #7.',
        '```sh',
        'cat docs/never.md   # commands and samples are not citations: DESIGN',
        '```',
        'As "Service" above says; "Nowhere" below does not exist.',
        '',
      ].join('\n'),
      'docs/guide.md': '# Guide\n\n## The part\n\n### Numbers (`GET /x/:id/stats`)\n\nBack to [the start](../README.md#service).\n',
      'apps/core/src/real.ts': [
        '/** Cites docs/guide.md, "The part" and docs/guide.md, "Missing part" (issue 11). */',
        "const url = 'http://x/docs/absent.md'; // docs/absent.md",
        'const re = /docs\\/regex.md/; const t = `// docs/in-template.md ${re ? `${url}` : \'\'} /* docs/too.md */`;',
        '/* apps/core/src/moved/file.ts moved; apps/core/src/real.ts stays */',
        'export { t };',
      ].join('\n'),
      'test/x/a.test.ts': '',
    });
    try {
      const repo = new Repository(root);
      const found = checkRepository(root).map((p) => `${p.file}:${p.line} ${p.cite} | ${p.why}`);
      expect(found.sort()).toEqual(
        [
          'README.md:3 [gone](docs/gone.md) | links to docs/gone.md, which the repository does not hold',
          'README.md:3 [no such part](docs/guide.md#nowhere) | docs/guide.md has no heading whose anchor is #nowhere',
          'README.md:3 [here](#nothing-here) | README.md has no heading whose anchor is #nothing-here',
          'README.md:4 `apps/core/src/gone.ts` | names apps/core/src/gone.ts, which the repository does not hold',
          'README.md:4 `apps/core/src/{real,other}.ts` | names apps/core/src/other.ts, which the repository does not hold',
          'README.md:5 `core/src/missing.ts` | names core/src/missing.ts, which the repository does not hold',
          'README.md:6 docs/lost.md | names docs/lost.md, which the repository does not hold',
          'README.md:7 docs/guide.md, "Imaginary" | docs/guide.md has no heading "Imaginary"',
          'README.md:8 DESIGN | cites DESIGN, which is not in the repository',
          "README.md:8 the spec | cites the spec, which is not in the repository",
          'README.md:8 § | cites a section (§) of a document that is not in the repository',
          'README.md:8 ../shared | cites the shared folder, which is not in the repository',
          'README.md:8 issue 18 | cites an issue number, which is not in the repository',
          'README.md:8 issues #7 | cites an issue number, which is not in the repository',
          'README.md:12 "Nowhere" below | README.md has no heading "Nowhere"',
          'apps/core/src/real.ts:1 docs/guide.md, "Missing part" | docs/guide.md has no heading "Missing part"',
          'apps/core/src/real.ts:1 issue 11 | cites an issue number, which is not in the repository',
          'apps/core/src/real.ts:2 docs/absent.md | names docs/absent.md, which the repository does not hold',
          'apps/core/src/real.ts:4 apps/core/src/moved/file.ts | names apps/core/src/moved/file.ts, which the repository does not hold',
        ].sort(),
      );
      expect(checkMarkdown(repo, 'docs/guide.md')).toEqual([]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("makes anchors as GitHub does", () => {
    const made = slugs(['Numbers (`GET /admin/api/campaigns/:id/stats`)', 'Auto-pause (`pause_on`, `paused_reason`)', 'Import', 'Import', 'Über **uns**']);
    expect([...made]).toEqual(['numbers-get-adminapicampaignsidstats', 'auto-pause-pause_on-paused_reason', 'import', 'import-1', 'über-uns']);
  });

  it('reads comments only, not strings, regular expressions or template literals that look like them', () => {
    const source = [
      "const a = 'x // not a comment';",
      'const b = a.replace(/\\/\\/ nor this/g, "") / 2 / 1; // one',
      'const c = `${a} /* nor this */ ${`${b}`} // nor this`; /* two */',
      'const d = { e: `${{ f: 1 }.f}` }; // three',
    ].join('\n');
    expect(comments(source).map((c) => c.text)).toEqual(['// one', '/* two */', '// three']);
  });
});
