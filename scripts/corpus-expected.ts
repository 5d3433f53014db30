/**
 * Builds the bounce corpus of the tests (test/fixtures/sisimai/) from local copies of two public repositories
 * (BSD 2-Clause, (C) azumakuniyuki and sisimai development team):
 * - github:sisimai/set-of-emails: the reports, maildir/bsd/*.eml, and its LICENSE;
 * - github:sisimai/go-sisimai: fact/*_test.go, whose `publiclist` tables give the expected answer of each file
 *   (per recipient: enhanced status, SMTP reply code, reason, hard bounce).
 * Optional third argument: a JSON array [{file, recipient, ...}] written by scripts/sisimai-dump/ (go-sisimai run on the
 * same files) that adds the expected recipient address; without it the expected.json keeps none.
 *
 *   npx tsx scripts/corpus-expected.ts <go-sisimai git dir> <set-of-emails git dir> [recipients.json]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [goDir, setDir, dumpFile] = process.argv.slice(2);
if (!goDir || !setDir) throw new Error('usage: corpus-expected.ts <go-sisimai git dir> <set-of-emails git dir> [recipients.json]');
const git = (dir: string, ...args: string[]) => execFileSync('git', ['--git-dir', dir, ...args], { maxBuffer: 1 << 28 });
const text = (dir: string, ...args: string[]) => git(dir, ...args).toString('utf8');

interface Expected { status: string; code: string; reason: string; hard: boolean; feedback?: string; recipient?: string }
const expected: Record<string, Expected[]> = {};

for (const file of text(goDir, 'ls-tree', '--name-only', 'HEAD', 'fact/').split('\n').filter((f) => /_test\.go$/.test(f))) {
  const src = text(goDir, 'show', `HEAD:${file}`);
  const fn = /func Test(Lhost|Rhost)?(\w+)\(/.exec(src);
  const engine = /EngineTest\(t,\s*"([^"]+)",\s*publiclist/.exec(src);
  if (!fn || !engine) continue;
  const prefix = fn[1] === 'Lhost' ? 'lhost-' : fn[1] === 'Rhost' ? 'rhost-' : '';
  const list = src.slice(src.indexOf('publiclist'), src.indexOf('EngineTest(t', src.indexOf('publiclist')));
  for (const m of list.matchAll(/\{"(\w+)",\s*(\d+),\s*"([^"]*)",\s*"([^"]*)",\s*"([^"]*)",\s*(true|false),\s*"([^"]*)"\}/g)) {
    const name = `${prefix}${engine[1]!.toLowerCase()}-${m[1]}.eml`;
    const row: Expected = { status: m[3]!, code: m[4]!, reason: m[5]!, hard: m[6] === 'true' };
    if (m[7]) row.feedback = m[7];
    (expected[name] ??= [])[Number(m[2]) - 1] = row;
  }
}

const present = new Set(text(setDir, 'ls-tree', '--name-only', 'HEAD', 'maildir/bsd/').split('\n').map((p) => p.replace('maildir/bsd/', '')));
for (const name of Object.keys(expected)) if (!present.has(name)) delete expected[name];

if (dumpFile) {
  const dump = JSON.parse(readFileSync(dumpFile, 'utf8')) as { file: string; recipient: string }[];
  const seen: Record<string, number> = {};
  for (const d of dump) {
    const i = (seen[d.file] = (seen[d.file] ?? -1) + 1);
    const row = expected[d.file]?.[i];
    if (row) row.recipient = d.recipient.toLowerCase();
  }
}

const root = join(__dirname, '..', 'test/fixtures/sisimai');
mkdirSync(join(root, 'bsd'), { recursive: true });
for (const name of Object.keys(expected).sort()) writeFileSync(join(root, 'bsd', name), git(setDir, 'show', `HEAD:maildir/bsd/${name}`));
writeFileSync(join(root, 'LICENSE'), git(setDir, 'show', 'HEAD:LICENSE'));
const sorted = Object.fromEntries(Object.keys(expected).sort().map((k) => [k, expected[k]]));
writeFileSync(
  join(root, 'expected.json'),
  `{\n${Object.entries(sorted).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(',\n')}\n}\n`,
);
console.log(`files: ${Object.keys(sorted).length}, recipients: ${Object.values(sorted).reduce((n, v) => n + (v?.length ?? 0), 0)}`);
