import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

/**
 * No module state that a test must reset (STYLE.md, "Wiring is explicit"): counters, caches, batchers and clients are
 * objects a main makes (the API's createApp, the worker's main.ts) and passes down, the way `db` is passed. A file of
 * apps/ may not declare at its top level:
 *
 * - a `let` or `var`;
 * - a `const` made with `new` (a Map, a Set, a Batcher, a client...): an object that holds state from import on.
 *
 * A `new Map([...])` or `new Set([...])` of fixed entries that the file never changes and does not export is a
 * constant table, and allowed, as is a `new RegExp` without the g or y flag. Anything else is refused unless it is listed below with the reason it may stay, and a
 * listed exception that is no longer there fails too, so the list stays true.
 */
const ROOT = path.join(__dirname, '..', '..');

const EXCEPTIONS: Record<string, Record<string, string>> = {
  'apps/core/src/config.ts': { current: 'the environment read and validated once (STYLE.md, "Configuration"); never changes after' },
  'apps/core/src/db.ts': {
    shared: "the process's database client, made by a main's first db() and closed by closeDb(): the handle passed down",
    pools: 'the pg pool under each client, so rawQuery runs on the pool of the client it is given (no state of its own)',
    unnamed: 'the pools behind a transaction pooler, fixed when the pool is made',
    planOnce: "each client's second pool, for statements planned once: opened on first use, closed with its client (closeClient)",
  },
  'apps/core/src/redis.ts': {
    shared: "the process's Redis connection, made on first use and closed by closeRedis()",
    closers: 'subscriber connections closed with it at closeRedis() (each made and owned by an object a main made)',
  },
  'apps/core/src/queues.ts': { queues: "the producer side of each queue, one per process and name, closed by closeQueues()" },
  'apps/core/src/metrics/index.ts': {
    registry: "the process's Prometheus registry: metric definitions made once; values only grow, and tests read differences",
  },
  'apps/core/src/outage.ts': { dependencies: "the dependency watch: one line per outage for the whole process (the errors helper's file)" },
  'apps/core/src/delivery/wire-mime.ts': { node: 'a nodemailer node kept only for its header encoding, a pure function of its arguments' },
  'apps/core/src/outbound/guard.ts': { special: 'the IANA special-purpose ranges, filled once at import and only read after' },
  'apps/core/src/validate.ts': { prepared: 'a memo of a pure function (each joi schema with our preferences): the same answer whatever ran before' },
  'apps/core/src/outreach/windows.ts': {
    formatters: 'a bounded memo of a pure function (a time zone\'s Intl formatter)',
    offsets: "a bounded memo of a pure function (a zone's offset in a quarter-hour)",
  },
  'apps/core/src/templates/engine.ts': { parsedMemo: 'a bounded memo of a pure function (a Liquid source parsed for a part of an email)' },
  'apps/api/src/openapi/document.ts': { built: 'a memo of a pure build (the OpenAPI document), made at the first request to spare every start' },
  'apps/api/src/openapi/admin-document.ts': { built: 'a memo of a pure build (the admin OpenAPI document), made at the first request to spare every start' },
};

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** A `new Map([...])` or `new Set([...])` of fixed entries, never changed by the file and not exported. */
function constantTable(statement: ts.VariableStatement, name: string, init: ts.NewExpression, text: string): boolean {
  const exported = statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
  const kind = init.expression.getText();
  if (exported || (kind !== 'Map' && kind !== 'Set') || init.arguments?.length !== 1) return false;
  const mutated = new RegExp(`\\b${name}\\s*\\.\\s*(?:add|set|delete|clear)\\s*\\(`).test(text);
  return !mutated;
}

/** A `new RegExp` without the g or y flag: it keeps no lastIndex between uses, like a literal. */
function statelessPattern(init: ts.NewExpression): boolean {
  if (init.expression.getText() !== 'RegExp') return false;
  const flags = init.arguments?.[1];
  return flags === undefined || (ts.isStringLiteral(flags) && !/[gy]/.test(flags.text));
}

/** The names a file declares as mutable state at its top level, with what they are. */
export function topLevelState(file: string, text: string): { name: string; what: string }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; what: string }[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const list = statement.declarationList;
    const mutable = (list.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) === 0 ? 'var' : list.flags & ts.NodeFlags.Let ? 'let' : null;
    for (const declaration of list.declarations) {
      const name = declaration.name.getText(source);
      if (mutable) {
        found.push({ name, what: mutable });
        continue;
      }
      let init = declaration.initializer;
      while (init && (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init))) init = init.expression;
      if (!init || !ts.isNewExpression(init)) continue;
      if (constantTable(statement, name, init, text) || statelessPattern(init)) continue;
      found.push({ name, what: `new ${init.expression.getText(source)}` });
    }
  }
  return found;
}

function moduleState(root = ROOT, exceptions = EXCEPTIONS): { refused: string[]; stale: string[] } {
  const refused: string[] = [];
  const seen = new Set<string>();
  for (const file of sources(path.join(root, 'apps'))) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    for (const { name, what } of topLevelState(rel, fs.readFileSync(file, 'utf8'))) {
      if (exceptions[rel]?.[name]) seen.add(`${rel} ${name}`);
      else refused.push(`${rel}: ${name} (${what})`);
    }
  }
  const stale = Object.entries(exceptions).flatMap(([rel, names]) => Object.keys(names).map((name) => `${rel} ${name}`)).filter((k) => !seen.has(k));
  return { refused: refused.sort(), stale };
}

describe('no module state that a test must reset', () => {
  it('no file of apps/ declares top-level mutable state, but the listed exceptions', () => {
    expect(moduleState().refused).toEqual([]);
  });

  it('every listed exception is still there (the list says what the code holds)', () => {
    expect(moduleState().stale).toEqual([]);
  });

  it('finds top-level state where it is declared (the check itself works)', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'module-state-'));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    try {
      write(
        'apps/core/src/sending/counters.ts',
        [
          'export const stats = { reads: 0 };', // an object literal: outside the rule (kept simple)
          'let reads = 0;',
          'var old = 1;',
          'const cache = new Map<number, string>();',
          'export const seen = new Set<string>(["a"]);',
          'const grown = new Set(["a"]);',
          'grown.add("b");',
          'const batcher = new Batcher(run) as Batcher;',
          'const KINDS = new Set(["a", "b"]);', // a constant table: allowed
          'const RE = /x/;',
          "const WORD = new RegExp('w', 'u');", // no lastIndex kept: allowed
          "const eachWord = new RegExp('w', 'g');",
          'function f() { let inner = 0; const m = new Map(); return [inner, m]; }',
        ].join('\n'),
      );
      write('apps/api/src/app.ts', 'let listed = 1;\nexport const fine = 2;\n');
      const result = moduleState(root, { 'apps/api/src/app.ts': { listed: 'a reason' }, 'apps/api/src/gone.ts': { away: 'a reason' } });
      expect(result.refused).toEqual([
        'apps/core/src/sending/counters.ts: batcher (new Batcher)',
        'apps/core/src/sending/counters.ts: cache (new Map)',
        'apps/core/src/sending/counters.ts: eachWord (new RegExp)',
        'apps/core/src/sending/counters.ts: grown (new Set)',
        'apps/core/src/sending/counters.ts: old (var)',
        'apps/core/src/sending/counters.ts: reads (let)',
        'apps/core/src/sending/counters.ts: seen (new Set)',
      ]);
      expect(result.stale).toEqual(['apps/api/src/gone.ts away']);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
