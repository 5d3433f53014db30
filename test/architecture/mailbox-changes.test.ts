import fs from 'node:fs';
import path from 'node:path';

/**
 * One home for "a mailbox changed" (docs/DEVELOPERS.md, "Layout"): mailboxes/ writes the row (writeMailboxChange) and
 * mailbox-settings/'s updateMailbox does what follows it (the sign-in's cached token and waiting mail, held outreach
 * steps planned again). A caller that wrote the row itself would skip those: only updateMailbox, and the OAuth2
 * reconnect (which follows it with the sign-in's part, oauth/reconnect.ts), may call the writer.
 */
const ROOT = path.join(__dirname, '..', '..');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

const callersOf = (name: string, dirs: string[]) =>
  dirs
    .flatMap((d) => sources(path.join(ROOT, d)))
    // a call, not the definition
    .filter((file) => new RegExp(`(?<!function )\\b${name}\\(`).test(fs.readFileSync(file, 'utf8')))
    .map((file) => path.relative(ROOT, file).split(path.sep).join('/'))
    .sort();

it('writes a mailbox change only where what follows it is done too', () => {
  expect(callersOf('writeMailboxChange', ['apps', 'scripts'])).toEqual(['apps/core/src/mailbox-settings/index.ts', 'apps/core/src/oauth/connect.ts']);
  expect(callersOf('signInChanged', ['apps', 'scripts'])).toEqual(['apps/core/src/mailbox-settings/index.ts', 'apps/core/src/oauth/connect.ts']);
});

it('changes a mailbox from the admin API, the console and the CLI through mailbox-settings/', () => {
  const callers = callersOf('updateMailbox', ['apps/api', 'scripts']);
  expect(callers).toEqual(expect.arrayContaining(['apps/api/src/console/pages/outreach-settings.ts', 'apps/api/src/routes/admin/mailboxes.ts', 'scripts/admin.ts']));
  for (const file of callers) expect(fs.readFileSync(path.join(ROOT, file), 'utf8')).toMatch(/import \{[^}]*\bupdateMailbox\b[^}]*\} from '[./]*(?:apps\/)?core\/src\/mailbox-settings'/);
});
