import fs from 'node:fs';
import path from 'node:path';

/**
 * The mutation groups that name lines of a file (stryker.config.mjs, `file:from-to`) mutate what they say: a change
 * above those lines moves the code, and the group would then mutate (and report on) other code. Each ranged file has
 * its anchors here: the first line, the last line and what the range must hold.
 */
const root = path.join(__dirname, '../..');
const ANCHORS: Record<string, { first: RegExp; last: RegExp; holds: RegExp }> = {
  'apps/core/src/domains/sending.ts': { first: /^export const SIGNED_HEADERS\b/, last: /^\];$/, holds: /'list-unsubscribe-post'/ },
  'apps/core/src/subscribers/repository.ts': { first: /^const becameActiveSql\b/, last: /^\}$/, holds: /export async function recordActivation\b/ },
};

const ranges = [...fs.readFileSync(path.join(root, 'stryker.config.mjs'), 'utf8').matchAll(/'(apps\/[^':]+\.ts):(\d+)-(\d+)'/g)].map((m) => ({
  file: m[1]!,
  from: Number(m[2]),
  to: Number(m[3]),
}));

it('stryker.config.mjs names line ranges of files this test knows', () => {
  expect(ranges.length).toBeGreaterThan(0);
  expect(ranges.filter((r) => !ANCHORS[r.file]).map((r) => r.file)).toEqual([]);
});

it.each(ranges)('$file:$from-$to still holds what its group mutates', ({ file, from, to }) => {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
  const anchor = ANCHORS[file]!;
  const range = lines.slice(from - 1, to);
  expect(range[0]).toMatch(anchor.first);
  expect(range[range.length - 1]).toMatch(anchor.last);
  expect(range.join('\n')).toMatch(anchor.holds);
});
