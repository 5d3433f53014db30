import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Modules only some requests or processes need are loaded on first use (apps/core/src/lazy.ts), so an API process that
 * never uses them does not carry them: imapflow (the console's IMAP check; the worker's reader), the MCP SDK (the first
 * /mcp request), mailauth (domain checks), juice and html-to-text (template rendering), acme-client (a tracking domain's first order). Each is tens of MB of RSS, and
 * the API's peak under load is held under 250 MB (bench/README.md).
 */
const LAZY = ['imapflow', '@modelcontextprotocol', 'mailauth', 'juice', 'html-to-text', 'acme-client'];
/** The worker writes the text part of html-only emails at delivery: html-to-text is its everyday work. */
const WORKER_LAZY = LAZY.filter((m) => m !== 'html-to-text');

/** Which of `modules` a fresh process has loaded once it required `files`. */
function loadedAfter(files: string[], modules: string[]): string[] {
  const script = `${files.map((f) => `require(${JSON.stringify(f)});`).join(' ')}
    const loaded = Object.keys(require.cache);
    console.log(JSON.stringify(${JSON.stringify(modules)}.filter((m) => loaded.some((k) => k.includes('/node_modules/' + m + '/')))));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: path.join(__dirname, '../..'), env: { ...process.env, LOG_LEVEL: 'warn' } });
  return JSON.parse(out.toString().trim().split('\n').pop()!) as string[];
}

it('importing the API loads none of the modules it loads on first use', () => {
  expect(loadedAfter(['./apps/api/src/app'], LAZY)).toEqual([]);
});

it("importing the worker's parts loads none of them either (imapflow waits for a mailbox with IMAP)", () => {
  expect(loadedAfter(['./apps/worker/src/workers', './apps/core/src/inbound/reader', './apps/core/src/delivery/deliver'], WORKER_LAZY)).toEqual([]);
});
