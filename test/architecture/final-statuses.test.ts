import fs from 'node:fs';
import path from 'node:path';
import { FINAL_STATUSES, FINAL_STATUSES_SQL, isFinalStatus } from '../../apps/core/src/message-status';
import { MessageStatus } from '../../generated/prisma/enums';

/**
 * The final message statuses are written once, in apps/core/src/message-status.ts; the delivery's claim, a send's
 * status, `Prefer: wait` and retention's SQL read them from there. A list of exactly those statuses written anywhere
 * else in apps/ (TypeScript or SQL text) is a second copy that can drift.
 */
const ROOT = path.join(__dirname, '..', '..');
const HOME = 'apps/core/src/message-status.ts';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every bracketed or parenthesised list of quoted words in the text, as sorted word lists. */
function quotedLists(text: string): string[][] {
  return [...text.matchAll(/[[(]\s*((?:'[a-z_]+'\s*,\s*)+'[a-z_]+')\s*,?\s*[\])]/g)].map((m) => [...m[1]!.matchAll(/'([a-z_]+)'/g)].map((w) => w[1]!).sort());
}

describe('the final message statuses', () => {
  it('are message statuses, and isFinalStatus and the SQL list say the same', () => {
    for (const status of FINAL_STATUSES) expect(Object.values(MessageStatus)).toContain(status);
    expect(Object.values(MessageStatus).filter(isFinalStatus).sort()).toEqual([...FINAL_STATUSES].sort());
    expect(quotedLists(FINAL_STATUSES_SQL)).toEqual([[...FINAL_STATUSES].sort()]);
  });

  it('are written in one place of apps/', () => {
    const final = JSON.stringify([...FINAL_STATUSES].sort());
    const copies = sources(path.join(ROOT, 'apps'))
      .map((file) => path.relative(ROOT, file).split(path.sep).join('/'))
      .filter((rel) => rel !== HOME && quotedLists(fs.readFileSync(path.join(ROOT, rel), 'utf8')).some((list) => JSON.stringify(list) === final));
    expect(copies).toEqual([]);
  });

  it('finds a copy where one is written (the check itself works)', () => {
    expect(quotedLists("const FINAL = new Set(['sent', 'failed', 'bounced', 'cancelled']);")).toEqual([['bounced', 'cancelled', 'failed', 'sent']]);
    expect(quotedLists("WHERE status IN ('cancelled', 'sent', 'bounced', 'failed')")).toEqual([['bounced', 'cancelled', 'failed', 'sent']]);
  });
});
