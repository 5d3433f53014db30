import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * What a citation may point at: a file, folder or heading of this repository. The guides (every .md) and the code's
 * comments are read for the citations they make; each one that names something the repository does not hold is a
 * problem. References to documents kept outside the repository (a design or a specification, their sections, issue
 * numbers) are refused outright: a reader of the repository cannot follow them.
 */
export interface Problem {
  file: string;
  line: number;
  cite: string;
  why: string;
}

/** Folders that hold no guide and no code of ours. */
const SKIPPED = new Set(['node_modules', 'generated', 'dist', '.git', 'coverage']);
/** A path written without its leading folders (`sending/repository.ts`) is checked when it names a file of these kinds. */
const FILE_KINDS = /\.(?:ts|js|md|json|sql|ya?ml|png|eml|pem|sh|css|prisma)$/;

const REFUSED: { pattern: RegExp; why: string }[] = [
  { pattern: /\bDESIGN\b/g, why: 'cites DESIGN, which is not in the repository' },
  { pattern: /§/g, why: 'cites a section (§) of a document that is not in the repository' },
  { pattern: /\.\.\/shared\b|\/work\/shared\b/g, why: 'cites the shared folder, which is not in the repository' },
  { pattern: /\bapi-v1\.md\b/g, why: 'cites api-v1.md, which is not in the repository' },
  { pattern: /\bthe spec\b|\bspec's\b/gi, why: 'cites the spec, which is not in the repository' },
  { pattern: /\bissues?\s+#?\d+/gi, why: 'cites an issue number, which is not in the repository' },
];

export class Repository {
  readonly files: string[];
  private readonly entries = new Set<string>();
  private readonly folderNames = new Set<string>();
  private readonly topLevel: Set<string>;
  private readonly ignored: string[];
  private readonly headingCache = new Map<string, string[]>();

  constructor(readonly root: string) {
    this.files = [];
    this.walk('');
    this.topLevel = new Set(
      fs.readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory() && !SKIPPED.has(e.name)).map((e) => e.name),
    );
    const gitignore = path.join(root, '.gitignore');
    this.ignored = fs.existsSync(gitignore)
      ? fs.readFileSync(gitignore, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
      : [];
  }

  private walk(rel: string): void {
    for (const e of fs.readdirSync(path.join(this.root, rel), { withFileTypes: true })) {
      if (SKIPPED.has(e.name)) continue;
      const child = rel ? `${rel}/${e.name}` : e.name;
      this.entries.add(child);
      if (e.isDirectory()) {
        this.folderNames.add(e.name);
        this.walk(child);
      } else this.files.push(child);
    }
  }

  markdown(): string[] {
    return this.files.filter((f) => f.endsWith('.md')).sort();
  }

  exists(rel: string): boolean {
    return this.entries.has(rel.replace(/\/+$/, ''));
  }

  isTopLevel(segment: string): boolean {
    return this.topLevel.has(segment);
  }

  isFolderName(segment: string): boolean {
    return this.folderNames.has(segment);
  }

  /** Outputs of runs (results files, logs) are named in the guides but never committed: .gitignore says which. */
  isIgnored(rel: string): boolean {
    return this.ignored.some((rule) => {
      const r = rule.replace(/^\//, '');
      if (r.startsWith('*.')) return rel.endsWith(r.slice(1));
      const bare = r.replace(/\/$/, '');
      return rel === bare || rel.startsWith(`${bare}/`);
    });
  }

  /** Paths matching `pattern` (segments may hold `*`), the repository's own entries only. */
  matching(pattern: string): string[] {
    const clean = pattern.replace(/\/+$/, '');
    if (!clean.includes('*')) return this.exists(clean) ? [clean] : [];
    const re = new RegExp(`^${clean.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`);
    return [...this.entries].filter((e) => re.test(e));
  }

  /** Files whose path ends with `tail` at a folder boundary (`sending/repository.ts`). */
  endingWith(tail: string): string[] {
    const clean = tail.replace(/\/+$/, '');
    return [...this.entries].filter((e) => e === clean || e.endsWith(`/${clean}`));
  }

  headings(rel: string): string[] {
    let found = this.headingCache.get(rel);
    if (!found) {
      found = [];
      let fence: string | null = null;
      for (const line of fs.readFileSync(path.join(this.root, rel), 'utf8').split('\n')) {
        const f = /^\s*(```+|~~~+)/.exec(line);
        if (f) {
          if (!fence) fence = f[1]!.slice(0, 3);
          else if (f[1]!.startsWith(fence)) fence = null;
          continue;
        }
        if (fence) continue;
        const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
        if (h) found.push(headingText(h[1]!));
      }
      this.headingCache.set(rel, found);
    }
    return found;
  }
}

/** A heading as rendered: code spans lose their backticks, links keep their text, emphasis marks go. */
export function headingText(markdown: string): string {
  return markdown
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*)(.+?)\1/g, '$2')
    .trim();
}

/** GitHub's anchors: lower case, punctuation dropped (not `-` and `_`), spaces made `-`, repeats numbered `-1`, `-2`. */
export function slugs(headings: string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings) {
    const base = h.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** A quoted section names a heading when it is the heading, or the heading's start before `:`, ` (` or `,`. */
export function namesHeading(section: string, headings: string[]): boolean {
  const s = section.trim().toLowerCase();
  return headings.some((h) => {
    const t = h.toLowerCase();
    return t === s || (t.startsWith(s) && /^(?::|\s\(|,|\s—)/.test(t.slice(s.length)));
  });
}

function expandBraces(p: string): string[] {
  const m = /\{([^{}]*)\}/.exec(p);
  if (!m) return [p];
  return m[1]!.split(',').flatMap((alt) => expandBraces(p.slice(0, m.index) + alt + p.slice(m.index + m[0].length)));
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The text with fenced code blocks blanked (offsets and line numbers kept): samples and commands are not citations. */
export function prose(markdown: string): string {
  let fence: string | null = null;
  return markdown
    .split('\n')
    .map((line) => {
      const f = /^\s*(```+|~~~+)/.exec(line);
      if (f) {
        if (!fence) fence = f[1]!.slice(0, 3);
        else if (f[1]!.startsWith(fence)) fence = null;
        return ' '.repeat(line.length);
      }
      return fence ? ' '.repeat(line.length) : line;
    })
    .join('\n');
}

/** Where a path written in `fromFile` points: beside that file first, else from the repository's root. */
function resolveFrom(repo: Repository, fromFile: string, written: string): string | null {
  const beside = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), written));
  if (repo.exists(beside)) return beside;
  const fromRoot = path.posix.normalize(written.replace(/^\.\//, ''));
  if (!fromRoot.startsWith('..') && repo.exists(fromRoot)) return fromRoot;
  return null;
}

/**
 * Checks one written path. Checked: a path whose first folder is one of the repository's top-level folders
 * (`apps/core/src/db.ts`, `test/helpers`, `docs/grafana/`), and a file path whose first folder is a folder of the
 * repository (`sending/repository.ts`, found anywhere). Placeholders (`<domain>`), absolute paths and outputs that
 * .gitignore keeps out are not citations of the repository.
 */
function pathProblem(repo: Repository, fromFile: string, written: string): string | null {
  const p = written.replace(/[.,;:]+$/, '');
  if (!p.includes('/') || p.startsWith('/') || /[<>$\s:]/.test(p) || /^\.\.?\//.test(p)) return null;
  const first = p.split('/')[0]!;
  const top = repo.isTopLevel(first);
  if (!top && !(repo.isFolderName(first) && FILE_KINDS.test(p))) return null;
  for (const one of expandBraces(p)) {
    if (repo.isIgnored(one)) continue;
    const found = top
      ? repo.matching(one).length > 0 || resolveFrom(repo, fromFile, one) !== null
      : one.includes('*') || repo.endingWith(one).length > 0;
    if (!found) return `names ${one}, which the repository does not hold`;
  }
  return null;
}

function refusedIn(text: string, file: string, at: (offset: number) => number): Problem[] {
  const problems: Problem[] = [];
  for (const { pattern, why } of REFUSED) {
    for (const m of text.matchAll(pattern)) problems.push({ file, line: at(m.index!), cite: m[0], why });
  }
  return problems;
}

/** Section references: `docs/x.md, "Section"`, `x.md ("Section")`, `[x](x.md), "Section"`. */
const SECTION_REF = /([\w.][\w./-]*\.md)`?\]?(?:\([^)\s]*\))?`?\)?,?[ \t]*\n?[ \t]*\(?["“]([^"”\n]+)["”]/g;

function sectionProblems(repo: Repository, file: string, text: string, at: (o: number) => number): Problem[] {
  const problems: Problem[] = [];
  for (const m of text.matchAll(SECTION_REF)) {
    const target = resolveFrom(repo, file, m[1]!);
    if (!target) continue; // the path check reports a missing file
    if (!namesHeading(m[2]!, repo.headings(target))) {
      problems.push({ file, line: at(m.index!), cite: m[0].replace(/\s+/g, ' '), why: `${target} has no heading "${m[2]}"` });
    }
  }
  return problems;
}

export function checkMarkdown(repo: Repository, file: string): Problem[] {
  const raw = fs.readFileSync(path.join(repo.root, file), 'utf8');
  const text = prose(raw);
  const at = (offset: number) => lineAt(text, offset);
  const problems: Problem[] = [...refusedIn(text, file, at), ...sectionProblems(repo, file, text, at)];
  const add = (offset: number, cite: string, why: string | null) => {
    if (why) problems.push({ file, line: at(offset), cite, why });
  };

  // Links and images: [text](path), [text](path#anchor), [text](#anchor).
  const linkTargets: [number, number][] = [];
  for (const m of text.matchAll(/!?\[(?:[^\]\n]|\n(?!\n))*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    const start = m.index! + m[0].lastIndexOf('(') + 1;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      linkTargets.push([m.index!, m.index! + m[0].length]); // https:, mailto: (its text names a page elsewhere)
      continue;
    }
    linkTargets.push([start, start + target.length]);
    const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
    const linked = rawPath ? decodeURI(rawPath) : file;
    const resolved = rawPath
      ? linked.startsWith('/')
        ? repo.exists(linked.slice(1)) ? linked.slice(1) : null
        : path.posix.normalize(path.posix.join(path.posix.dirname(file), linked))
      : file;
    if (!resolved || !repo.exists(resolved)) {
      add(m.index!, m[0], `links to ${linked}, which the repository does not hold`);
      continue;
    }
    if (anchor !== undefined) {
      if (!resolved.endsWith('.md')) add(m.index!, m[0], `an anchor into ${resolved}, which is not a guide`);
      else if (!slugs(repo.headings(resolved)).has(anchor.toLowerCase())) {
        add(m.index!, m[0], `${resolved} has no heading whose anchor is #${anchor}`);
      }
    }
  }
  const inLinkTarget = (o: number) => linkTargets.some(([s, e]) => o >= s && o < e);

  // "Section" above / below: a heading of this same guide.
  for (const m of text.matchAll(/["“]([^"”\n]+)["”]\)?\s+(?:above|below)\b|\bsee ["“]([^"”\n]+)["”]/g)) {
    const section = m[1] ?? m[2]!;
    if (!namesHeading(section, repo.headings(file))) add(m.index!, m[0], `${file} has no heading "${section}"`);
  }

  // Paths in code spans, and bare paths in the prose.
  const spans: [number, number][] = [];
  for (const m of text.matchAll(/`([^`\n]+)`/g)) {
    spans.push([m.index!, m.index! + m[0].length]);
    const content = m[1]!.trim();
    if (/^[\w.{}*-][\w./{},*-]*$/.test(content)) add(m.index!, m[0], pathProblem(repo, file, content));
  }
  const inSpan = (o: number) => spans.some(([s, e]) => o >= s && o < e);
  for (const m of text.matchAll(/(?<![\w./:@<>$~`#-])([\w-]+\/[\w./*-]*)/g)) {
    if (inSpan(m.index!) || inLinkTarget(m.index!)) continue;
    const written = m[1]!.replace(/[.,;:]+$/, '');
    add(m.index!, written, pathProblem(repo, file, written));
  }
  return problems;
}

/** After these tokens a `/` divides; elsewhere it starts a regular expression. */
function endsOperand(kind: ts.SyntaxKind): boolean {
  return (
    kind === ts.SyntaxKind.Identifier ||
    kind === ts.SyntaxKind.PrivateIdentifier ||
    kind === ts.SyntaxKind.NumericLiteral ||
    kind === ts.SyntaxKind.BigIntLiteral ||
    kind === ts.SyntaxKind.StringLiteral ||
    kind === ts.SyntaxKind.NoSubstitutionTemplateLiteral ||
    kind === ts.SyntaxKind.TemplateTail ||
    kind === ts.SyntaxKind.RegularExpressionLiteral ||
    kind === ts.SyntaxKind.CloseParenToken ||
    kind === ts.SyntaxKind.CloseBracketToken ||
    kind === ts.SyntaxKind.CloseBraceToken ||
    kind === ts.SyntaxKind.ThisKeyword ||
    kind === ts.SyntaxKind.SuperKeyword ||
    kind === ts.SyntaxKind.TrueKeyword ||
    kind === ts.SyntaxKind.FalseKeyword ||
    kind === ts.SyntaxKind.NullKeyword ||
    kind === ts.SyntaxKind.PlusPlusToken ||
    kind === ts.SyntaxKind.MinusMinusToken
  );
}

/** The comments of a TypeScript file, with their offsets, as the compiler's scanner finds them. */
export function comments(source: string): { offset: number; text: string }[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, source);
  const out: { offset: number; text: string }[] = [];
  const templates: number[] = []; // per open template literal, the braces opened inside its current `${`
  let previous = ts.SyntaxKind.Unknown;
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      out.push({ offset: scanner.getTokenStart(), text: scanner.getTokenText() });
      continue;
    }
    if (kind === ts.SyntaxKind.WhitespaceTrivia || kind === ts.SyntaxKind.NewLineTrivia) continue;
    if (kind === ts.SyntaxKind.TemplateHead) templates.push(0);
    else if (kind === ts.SyntaxKind.OpenBraceToken && templates.length) templates[templates.length - 1]!++;
    else if (kind === ts.SyntaxKind.CloseBraceToken && templates.length) {
      if (templates[templates.length - 1] === 0) {
        // this `}` closes a `${`: the literal's text goes on, and is no comment
        kind = scanner.reScanTemplateToken(false);
        if (kind === ts.SyntaxKind.TemplateTail) templates.pop();
      } else templates[templates.length - 1]!--;
    } else if ((kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) && !endsOperand(previous)) {
      kind = scanner.reScanSlashToken(); // a regular expression, whose `//` or `/*` is no comment
    }
    previous = kind;
  }
  return out;
}

/**
 * What a code comment cites: a guide (`docs/x.md`, `bench/README.md`), with or without a quoted section, and any path
 * under a top-level folder of the repository; and no document outside it.
 */
export function checkComments(repo: Repository, file: string): Problem[] {
  const source = fs.readFileSync(path.join(repo.root, file), 'utf8');
  const problems: Problem[] = [];
  for (const c of comments(source)) {
    const at = (o: number) => lineAt(source, c.offset + o);
    problems.push(...refusedIn(c.text, file, at), ...sectionProblems(repo, file, c.text, at));
    for (const m of c.text.matchAll(/(?<![\w./:@<>$~`#-])([\w-]+\/[\w./*-]*)/g)) {
      const written = m[1]!.replace(/[.,;:]+$/, '');
      if (!repo.isTopLevel(written.split('/')[0]!)) continue;
      const why = pathProblem(repo, file, written);
      if (why) problems.push({ file, line: at(m.index!), cite: written, why });
    }
  }
  return problems;
}

/** The code whose comments are read: every .ts file of the repository's own folders. */
export function codeFiles(repo: Repository): string[] {
  return repo.files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).sort();
}

export function checkRepository(root: string): Problem[] {
  const repo = new Repository(root);
  return [
    ...repo.markdown().flatMap((f) => checkMarkdown(repo, f)),
    ...codeFiles(repo).flatMap((f) => checkComments(repo, f)),
  ];
}
