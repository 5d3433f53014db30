import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { ApiApp } from '../../apps/api/src/app';
import { ADMIN_TOKEN } from '../helpers/api';

/** Debian's chromium (never `playwright install`: its download host is out of reach). */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export interface ConsoleBrowser {
  /** the console's origin, `http://127.0.0.1:<port>` */
  readonly base: string;
  readonly browser: Browser;
  readonly page: Page;
}

/**
 * The file's API app on a loopback port and a headless chromium on it (playwright-core), started before the file's
 * tests and closed after them. `signIn` signs the page in with the admin token; `context` may route or watch the
 * browser context before the page opens (console.test.ts keeps every request on loopback).
 */
export function useConsoleBrowser(
  ctx: { readonly api: ApiApp },
  options: { signIn?: boolean; viewport?: { width: number; height: number }; context?: (context: BrowserContext) => Promise<unknown>; port?: () => number } = {},
): ConsoleBrowser {
  const held: { base?: string; browser?: Browser; page?: Page; server?: http.Server } = {};
  beforeAll(async () => {
    held.server = http.createServer(ctx.api.app);
    // `port`: a port chosen before the app read its settings (PUBLIC_URL must name it: an OAuth2 callback comes back there)
    await new Promise<void>((resolve) => held.server!.listen(options.port?.() ?? 0, '127.0.0.1', resolve));
    held.base = `http://127.0.0.1:${(held.server.address() as AddressInfo).port}`;
    held.browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await held.browser.newContext(options.viewport ? { viewport: options.viewport } : {});
    await options.context?.(context);
    held.page = await context.newPage();
    if (options.signIn) {
      await held.page.goto(`${held.base}/admin/signin`);
      await held.page.fill('input[name=token]', ADMIN_TOKEN);
      await held.page.click('button:has-text("Sign in")');
    }
  }, 60_000);
  afterAll(async () => {
    await held.browser?.close();
    await new Promise((resolve) => (held.server ? held.server.close(resolve) : resolve(undefined)));
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useConsoleBrowser(): the browser starts in beforeAll');
    return value;
  };
  return {
    get base() {
      return started(held.base);
    },
    get browser() {
      return started(held.browser);
    },
    get page() {
      return started(held.page);
    },
  };
}

/**
 * A `context` option that collects what a page complains of (console errors and warnings, a CSP violation among them,
 * and uncaught errors) into `problems`; failed loads are left to the test, which sees their answers.
 */
export const collectProblems =
  (problems: string[]) =>
  async (context: BrowserContext): Promise<void> => {
    context.on('console', (m) => {
      if ((m.type() === 'error' || m.type() === 'warning') && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
    });
    context.on('weberror', (e) => problems.push(e.error().message));
  };

/** A second browser context of the same browser, with JavaScript off (what a page does without scripts), signed in. */
export async function signedInWithoutScript(view: ConsoleBrowser, viewport = { width: 1366, height: 900 }): Promise<{ page: Page; close(): Promise<void> }> {
  const context = await view.browser.newContext({ javaScriptEnabled: false, viewport });
  const page = await context.newPage();
  await page.goto(`${view.base}/admin/signin`);
  await page.fill('input[name=token]', ADMIN_TOKEN);
  await page.click('button:has-text("Sign in")');
  return { page, close: () => context.close() };
}
