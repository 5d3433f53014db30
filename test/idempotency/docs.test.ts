import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ABANDONED_AFTER_MS } from '../../apps/core/src/idempotency';

/** The guides state the takeover time of an abandoned `processing` record as the code has it, in every place. */
it('docs/idempotency.md and docs/reliability.md give the takeover of an abandoned record as ABANDONED_AFTER_MS', () => {
  const stated: string[] = [];
  for (const file of ['docs/idempotency.md', 'docs/reliability.md']) {
    const text = readFileSync(path.join(__dirname, '../..', file), 'utf8').replace(/\s+/g, ' ');
    const found = [...text.matchAll(/(?:`processing` after|taken over after) (\d+) s/g)].map((m) => `${file}: ${m[1]} s`);
    expect(found.length).toBeGreaterThan(0);
    stated.push(...found);
  }
  expect(stated).toEqual(stated.map((s) => s.replace(/\d+ s$/, `${ABANDONED_AFTER_MS / 1000} s`)));
});
