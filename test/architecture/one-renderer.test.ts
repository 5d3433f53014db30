import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

/**
 * One renderer for every email (docs/templates.md): Liquid through apps/core/src/templates/. Nothing else in apps/
 * may fill placeholders: no template engine imported, no pattern that looks for `{{` or `{%`, no placeholder kept as a
 * text or searched for, split or replaced by (joi's own message templates, `{{#label}}`, are joi's; prose is prose),
 * and no renderer of its own over templates' engine (a file outside templates/ that imports templates/engine: the
 * outreach steps' renderer once did, its variables its own). Every email calls templates' own functions (render.ts,
 * list-copy.ts, content.ts). A second renderer growing anywhere else fails here.
 */
const ROOT = path.join(__dirname, '..', '..');
const HOME = 'apps/core/src/templates/';
const ENGINES = ['liquidjs', 'html-to-text', 'juice', 'mustache', 'handlebars', 'ejs', 'nunjucks', 'dot', 'pug'];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

const PLACEHOLDER_PATTERN = /\\\{\\\{|\\\{%|\{\{|\{%/;
/** joi's message templates (`{{#label}}`) are joi's own renderer for its error words, not an email's. */
const JOI_TEMPLATE = /\{\{#\w+\}\}/g;

const SEARCHES = ['replace', 'replaceAll', 'split', 'includes', 'indexOf', 'startsWith', 'endsWith'];

/**
 * A text that stands for a placeholder: the whole text is one (`'{{name}}'`, a marker kept in a constant), or it is
 * what a body is searched, split or replaced by. Prose that mentions placeholders (help in the console, a tool's
 * description) is neither.
 */
function placeholderText(node: ts.StringLiteral | ts.NoSubstitutionTemplateLiteral): boolean {
  const text = node.text.replace(JOI_TEMPLATE, '');
  if (!/\{\{|\{%/.test(text)) return false;
  if (/^\s*(?:\{\{[^{}]*\}\}|\{%[^{}]*%\})\s*$/.test(text)) return true;
  const call = node.parent;
  return ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && SEARCHES.includes(call.expression.name.text) && call.arguments.includes(node);
}

/** What in one file is a renderer of its own: each finding with its line. */
export function secondRenderers(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${what}`);
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const name = node.moduleSpecifier.text;
      if (ENGINES.includes(name)) at(node, `imports the template engine ${name}`);
      if (/(^|\/)templates\/engine$/.test(name)) at(node, `imports templates' engine (${name}): a renderer of its own`);
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg) && ENGINES.includes(arg.text)) at(node, `requires the template engine ${arg.text}`);
    }
    if (ts.isRegularExpressionLiteral(node) && PLACEHOLDER_PATTERN.test(node.text)) at(node, `a placeholder pattern ${node.text}`);
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp') {
      const arg = node.arguments?.[0];
      if (arg && ts.isStringLiteralLike(arg) && PLACEHOLDER_PATTERN.test(arg.text)) at(node, 'a placeholder pattern built with new RegExp');
    }
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && placeholderText(node)) at(node, `placeholder text ${JSON.stringify(node.text.slice(0, 40))}`);
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ['replace', 'replaceAll', 'split'].includes(node.expression.name.text)) {
      const arg = node.arguments[0];
      if (arg && ts.isIdentifier(arg) && /PLACEHOLDER|MARKER/.test(arg.text)) at(node, `fills the placeholder ${arg.text} by ${node.expression.name.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function renderersOutsideHome(root = ROOT): string[] {
  return sources(path.join(root, 'apps'))
    .map((file) => path.relative(root, file).split(path.sep).join('/'))
    .filter((rel) => !rel.startsWith(HOME))
    .flatMap((rel) => secondRenderers(rel, fs.readFileSync(path.join(root, rel), 'utf8')));
}

describe('one renderer for every email', () => {
  it('no file of apps/ outside templates/ renders placeholders of its own', () => {
    expect(renderersOutsideHome()).toEqual([]);
  });

  it('the renderer is where the check looks for it (the check sees the real one)', () => {
    const home = sources(path.join(ROOT, HOME)).flatMap((file) => secondRenderers(file, fs.readFileSync(file, 'utf8')));
    expect(home.some((f) => f.includes('imports the template engine liquidjs'))).toBe(true);
    expect(home.some((f) => f.includes('placeholder text'))).toBe(true);
  });

  it('finds a second renderer in each of its shapes (the check itself works)', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'one-renderer-'));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    try {
      write(
        'apps/core/src/outreach/render.ts',
        [
          "import { Liquid } from 'liquidjs';",
          'const PLACEHOLDER = /\\{\\{\\s*(\\w+)\\s*\\}\\}/g;',
          "export const fill = (t: string, name: string) => t.replace(PLACEHOLDER, name).split('{{name}}').join(name);",
          "export const help = 'Placeholders: {{name}} and {{email}}'; // prose: allowed",
          "export const has = (t: string) => t.includes('Dear {{ name }}');",
          "const built = new RegExp('\\\\{\\\\{name\\\\}\\\\}');",
          'export const own = (t: string, UNSUBSCRIBE_PLACEHOLDER: string) => t.split(UNSUBSCRIBE_PLACEHOLDER);',
          "export const joiWords = { 'array.max': '{{#label}} must hold at most {{#limit}} tags' };",
          "const html = require('html-to-text');",
          "import { renderSource } from '../templates/engine';",
        ].join('\n'),
      );
      write('apps/core/src/templates/engine.ts', "import { Liquid } from 'liquidjs';\nconst X = /\\{\\{/;");
      const found = renderersOutsideHome(root);
      expect(found).toEqual([
        'apps/core/src/outreach/render.ts:1 imports the template engine liquidjs',
        'apps/core/src/outreach/render.ts:2 a placeholder pattern /\\{\\{\\s*(\\w+)\\s*\\}\\}/g',
        'apps/core/src/outreach/render.ts:3 fills the placeholder PLACEHOLDER by replace',
        'apps/core/src/outreach/render.ts:3 placeholder text "{{name}}"',
        'apps/core/src/outreach/render.ts:5 placeholder text "Dear {{ name }}"',
        'apps/core/src/outreach/render.ts:6 a placeholder pattern built with new RegExp',
        'apps/core/src/outreach/render.ts:7 fills the placeholder UNSUBSCRIBE_PLACEHOLDER by split',
        'apps/core/src/outreach/render.ts:9 requires the template engine html-to-text',
        "apps/core/src/outreach/render.ts:10 imports templates' engine (../templates/engine): a renderer of its own",
      ]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
