import fs from 'node:fs';
import path from 'node:path';
import { inTree } from '../helpers/tree';

/**
 * Delivery knows no domain (docs/DEVELOPERS.md, "Layout"): apps/core/src/delivery/ takes what each kind of email needs
 * (its links, its guard, what follows its end) and how a mailbox signs in from the registrations each process's main
 * hands it (core/src/email-kinds), never by importing the folders that write mail. The folders that register are found,
 * not listed: every folder with an `email-kind.ts`, every folder the list imports (the sign-in, oauth; the bounce
 * policy, inbound) and the list itself.
 */
const CORE = path.join(__dirname, '..', '..', 'apps', 'core', 'src');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The folder of core each relative import of `file` lands in (a file at core's top: its own name). */
function importedFolders(core: string, file: string): { line: number; folder: string }[] {
  const text = fs.readFileSync(file, 'utf8');
  const found: { line: number; folder: string }[] = [];
  const pattern = /\b(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    const target = path.relative(core, path.resolve(path.dirname(file), m[1]!));
    if (target.startsWith('..')) continue;
    found.push({ line: text.slice(0, m.index).split('\n').length, folder: target.split(path.sep)[0]! });
  }
  return found;
}

function registeringFolders(core: string): string[] {
  const withKinds = sources(core)
    .filter((f) => path.basename(f) === 'email-kind.ts')
    .map((f) => path.relative(core, f).split(path.sep)[0]!);
  const list = path.join(core, 'email-kinds');
  const listed = fs.existsSync(list) ? sources(list).flatMap((f) => importedFolders(core, f).map((i) => i.folder)) : [];
  return [...new Set([...withKinds, ...listed, 'email-kinds'])].filter((f) => f !== 'delivery' && !f.endsWith('.ts')).sort();
}

/** Each import of a registering folder by a file of delivery/, with its line. */
function domainImports(core: string): string[] {
  const forbidden = new Set(registeringFolders(core));
  return sources(path.join(core, 'delivery')).flatMap((file) =>
    importedFolders(core, file)
      .filter((i) => forbidden.has(i.folder))
      .map((i) => `${path.relative(core, file).split(path.sep).join('/')}:${i.line} imports ${i.folder}/`),
  );
}

describe('delivery knows no domain', () => {
  it('finds the folders that register with delivery (the check sees the real ones)', () => {
    expect(registeringFolders(CORE)).toEqual(expect.arrayContaining(['broadcasts', 'email-kinds', 'inbound', 'lifecycle', 'oauth', 'outreach', 'preferences', 'sending', 'subscribers']));
  });

  it('no file of delivery/ imports a folder that registers with it', () => {
    expect(domainImports(CORE)).toEqual([]);
  });

  it('finds such an import in each of its shapes (the check itself works)', () => {
    const deliver = [
      "import { autoPauseAfter } from '../outreach/auto-pause';",
      "import type { X } from '../oauth/tokens';",
      "import { textOf } from '../templates/content';",
      "const lazy = () => import('../email-kinds');",
    ].join('\n');
    const list = "import { oauthLoginOf } from '../oauth/tokens';\nimport type { DeliveryRegistrations } from '../delivery/delivery';";
    const files = { 'outreach/email-kind.ts': 'export const x = 1;', 'templates/content.ts': 'export const y = 1;', 'email-kinds/index.ts': list, 'delivery/deliver.ts': deliver };
    expect(inTree(files, domainImports)).toEqual(['delivery/deliver.ts:1 imports outreach/', 'delivery/deliver.ts:2 imports oauth/', 'delivery/deliver.ts:4 imports email-kinds/']);
  });
});
