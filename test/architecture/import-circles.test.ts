import fs from 'node:fs';
import path from 'node:path';

/**
 * No import circle in apps/, type-only imports included: a circle makes load order decide what a module sees (an
 * `undefined` at start), and a type-only one still ties two modules that should stand apart. Every relative specifier
 * of `import ... from`, `export ... from`, `import type`, a bare `import '...'` and `import('...')` with a literal is
 * resolved to its file (`x.ts` or `x/index.ts`); the graph must have no strongly connected part of more than one file,
 * and no file importing itself.
 */
const ROOT = path.join(__dirname, '..', '..');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The file without its comments, so an example in prose is not read as an import. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const SPECIFIERS = [
  /\b(?:import|export)\s+(?:type\s+)?[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
  /\bimport\s*['"]([^'"]+)['"]/g,
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** The relative specifiers a file imports from. */
export function specifiersOf(text: string): string[] {
  const body = code(text);
  return SPECIFIERS.flatMap((re) => [...body.matchAll(re)].map((m) => m[1]!)).filter((s) => s.startsWith('.'));
}

function resolve(from: string, specifier: string): string | null {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** Each circle (a strongly connected part of more than one file, or a file importing itself), files relative to ROOT. */
export function circles(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's algorithm, iterative so that a deep graph cannot overflow the stack
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; i: number }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      low.set(node, next++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.get(node) ?? [])], i: 0 });
    };
    enter(start);
    while (work.length) {
      const top = work[work.length - 1]!;
      if (top.i < top.edges.length) {
        const to = top.edges[top.i++]!;
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const part: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          part.push(member);
        } while (member !== top.node);
        if (part.length > 1 || graph.get(top.node)?.has(top.node)) found.push(part.sort());
      }
    }
  }
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** The shortest way around from the circle's first file back to it, so the message says which imports to break. */
function shortestRound(graph: Map<string, Set<string>>, part: string[]): string[] {
  const inPart = new Set(part);
  const start = part[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const at = queue.shift()!;
    for (const to of graph.get(at) ?? []) {
      if (!inPart.has(to)) continue;
      if (to === start) {
        const route = [start];
        for (let back: string | undefined = at; back !== undefined && back !== start; back = cameFrom.get(back)) route.splice(1, 0, back);
        return [...route, start];
      }
      if (!cameFrom.has(to)) (cameFrom.set(to, at), queue.push(to));
    }
  }
  return part;
}

function importGraph(): { graph: Map<string, Set<string>>; unresolved: string[] } {
  const graph = new Map<string, Set<string>>();
  const unresolved: string[] = [];
  const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');
  for (const file of sources(path.join(ROOT, 'apps'))) {
    const edges = new Set<string>();
    for (const specifier of specifiersOf(fs.readFileSync(file, 'utf8'))) {
      const target = resolve(file, specifier);
      if (target === null) {
        // a relative import of something that is not a .ts file (generated/, a .json) is no edge between our modules
        if (!/generated\/|\.json$/.test(specifier)) unresolved.push(`${rel(file)}: ${specifier}`);
        continue;
      }
      if (target.startsWith(path.join(ROOT, 'apps') + path.sep)) edges.add(rel(target));
    }
    graph.set(rel(file), edges);
  }
  return { graph, unresolved };
}

describe('imports between the modules of apps/', () => {
  it('reads every kind of import and finds a circle, a self-import too', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from '../b/index';",
      "export { c } from './c';",
      "export * from './d';",
      "import './e';",
      "const f = await import('./f');",
      "import {\n  g,\n  type G,\n} from './g';",
      "// import { h } from './h';",
      "import express from 'express';",
    ].join('\n');
    expect(specifiersOf(text).sort()).toEqual(['../b/index', './a', './c', './d', './e', './f', './g']);
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['d'])],
      ['e', new Set(['a'])],
    ]);
    expect(circles(graph)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('resolves every relative import to a file', () => {
    expect(importGraph().unresolved).toEqual([]);
  });

  it('hold no circle, type-only imports included', () => {
    const { graph } = importGraph();
    expect(graph.size).toBeGreaterThan(100);
    const found = circles(graph).map((part) => `${part.length} files: ${shortestRound(graph, part).join(' -> ')}${part.length > 2 ? ` (all: ${part.join(', ')})` : ''}`);
    expect(found).toEqual([]);
  });
});
