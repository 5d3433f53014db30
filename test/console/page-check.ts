import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

/**
 * The checks every console page passes at each width (layout.test.ts, and the editors' own tests): no sideways scroll
 * of the page itself (a long value scrolls or wraps in its own box), no table scrolling sideways inside its box on a
 * phone (there each row reads as a card), no axe-core violation of WCAG 2.x level A or AA; and its screenshot.
 */
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** At most this wide, tables are cards (the console's CSS, views.ts). */
export const PHONE = 760;

export interface Finding {
  page: string;
  width: number;
  problem: string;
}

/** The page as loaded, laid out again at `width` (no reload): its overflow, its axe-core violations, its screenshot at `shot`. */
export async function checkPage(page: Page, where: string, width: number, shot: string): Promise<Finding[]> {
  await page.setViewportSize({ width, height: 900 });
  const found: Finding[] = [];
  // run in the page (a string: the test's TypeScript knows no DOM): how wide the page is, and the first elements past its edge
  const overflow = await page.evaluate<{ scroll: number; client: number; wide: string[]; tables: string[] }>(`(() => {
    const root = document.documentElement;
    const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().replace(/\\s+/g, '.') : '');
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > root.clientWidth + 1 && !e.parentElement.closest('.scroll, pre, code, svg'))
      .slice(0, 3)
      .map(name);
    const tables = root.clientWidth > ${PHONE} ? [] : [...document.querySelectorAll('table')]
      .filter((t) => !t.closest('.scroll') && t.scrollWidth > t.clientWidth + 1)
      .slice(0, 3)
      .map((t) => name(t) + ' (' + t.scrollWidth + ' px in ' + t.clientWidth + ')');
    return { scroll: root.scrollWidth, client: root.clientWidth, wide, tables };
  })()`);
  if (overflow.scroll > overflow.client) found.push({ page: where, width, problem: `scrolls sideways: ${overflow.scroll} px wide in ${overflow.client} (${overflow.wide.join(', ')})` });
  if (overflow.tables.length) found.push({ page: where, width, problem: `a table scrolls sideways instead of reading as cards: ${overflow.tables.join(', ')}` });
  if ((await page.evaluate('typeof axe')) === 'undefined') await page.evaluate(AXE);
  const violations = await page.evaluate<string[]>(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] })
    .then((r) => r.violations.map((v) => v.id + ' (' + v.impact + ') at ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')))`);
  for (const v of violations) found.push({ page: where, width, problem: `axe: ${v}` });
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  return found;
}
