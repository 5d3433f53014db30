import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { useApi } from '../helpers/api';
import { useConsoleBrowser } from './browser';
import { seedConsole } from './seed';
import { checkPage, type Finding } from './page-check';

/**
 * Every console page, found by following the console's own links from the overview (one page of each shape: a list's
 * page stands for every list's), on a service with data, at a laptop's width (1366 px) and a phone's (390 px): each is
 * screenshot, fails on horizontal scroll of the page itself (a long value scrolls or wraps in its own box) and, on the
 * phone, of a table inside its box (there each row reads as a card), and is checked by axe-core for WCAG 2.x level A
 * and AA violations (labels, contrast, names, keyboard order): page-check.ts.
 * Screenshots go to CONSOLE_LAYOUT_SHOTS, or a folder under the system's temp folder.
 */
// some 30 pages, each laid out at two widths and checked by axe-core, on a busy 2-core machine
jest.setTimeout(1_200_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx, { signIn: true, viewport: { width: 1366, height: 900 } });
const WIDTHS = [1366, 390];
const SHOTS = process.env.CONSOLE_LAYOUT_SHOTS || fs.mkdtempSync(path.join(os.tmpdir(), 'console-layout-'));
// links that leave the console's pages: the queue dashboard, the API docs, downloads
const NOT_PAGES = /^\/admin\/(queues|api|static)(\/|$)|\/oauth|\.(csv|json|ndjson)$|\/(export|download|preview|raw)(\/|$)/;

/** `/admin/lists/7?after=3` and `/admin/lists/9` are one page: its shape with ids as `:id`, query left out. */
const shapeOf = (href: string) => href.split(/[?#]/)[0]!.replace(/\/[0-9a-f]{8}-[0-9a-f-]{27,}/g, '/:uuid').replace(/\/\d+/g, '/:id');

async function consoleLinks(page: Page, base: string): Promise<string[]> {
  const hrefs = await page.locator('a[href^="/admin"]').evaluateAll((as) => as.map((a) => a.getAttribute('href')!));
  return hrefs.filter((h) => !NOT_PAGES.test(h.split(/[?#]/)[0]!)).map((h) => new URL(h, base).pathname + new URL(h, base).search);
}

/** The page laid out at `width`, checked (page-check.ts) and screenshot under its shape's name. */
async function check(page: Page, where: string, width: number): Promise<Finding[]> {
  const name = shapeOf(where).replace(/^\/admin\/?/, '').replace(/[/:]+/g, '-') || 'overview';
  return checkPage(page, where, width, path.join(SHOTS, `${name}-${width}.png`));
}

describe('every console page', () => {
  it('fits at 1366 and 390 px without sideways scroll and has no axe-core A/AA violation', async () => {
    const { page, base } = view;
    const seeded = await seedConsole(ctx.api);
    const queue = ['/admin', `/admin/subscribers/${seeded.subscriber}`, `/admin/messages/${seeded.message}`];
    const shapes = new Set<string>();
    const visited: string[] = [];
    const findings: Finding[] = [];
    while (queue.length && visited.length < 80) {
      const next = queue.shift()!;
      const shape = shapeOf(next);
      if (shapes.has(shape)) continue;
      shapes.add(shape);
      visited.push(next);
      const answer = await page.goto(base + next);
      if (!answer || answer.status() >= 400) findings.push({ page: next, width: 0, problem: `answered ${answer?.status()}` });
      for (const width of WIDTHS) findings.push(...(await check(page, next, width)));
      queue.push(...(await consoleLinks(page, base)));
    }
    // the pages that must be among them: every navigation entry and the detail pages of each kind seeded
    expect(findings.map((f) => `${f.page} @${f.width}: ${f.problem}`)).toEqual([]);
    for (const must of ['/admin/domains/:id', '/admin/lists/:id', '/admin/subscribers/:id', '/admin/messages/:uuid', '/admin/campaigns/:id', '/admin/templates/:id', '/admin/broadcasts/:id', '/admin/suppressions']) {
      expect([...shapes]).toContain(must);
    }
    expect(fs.readdirSync(SHOTS).filter((f) => f.endsWith('.png')).length).toBeGreaterThanOrEqual(visited.length * WIDTHS.length);
  });
});
