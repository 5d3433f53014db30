import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Modules only some requests or processes need are loaded on first use (apps/core/src/lazy.ts), so an API process that
 * never uses them does not carry them: imapflow (the console's IMAP check; the worker's reader), the MCP SDK (the first
 * /mcp request), mailauth (domain checks), juice and html-to-text (template rendering), acme-client (a tracking domain's first order). Each is tens of MB of RSS, and
 * the API's peak under load is held under 250 MB (bench/README.md).
 */
const LAZY = ['imapflow', '@modelcontextprotocol', 'mailauth', 'juice', 'html-to-text', 'acme-client'];

it('importing the API loads none of the modules it loads on first use', () => {
  const script = `require('./apps/api/src/app');
    const loaded = Object.keys(require.cache);
    console.log(JSON.stringify(${JSON.stringify(LAZY)}.filter((m) => loaded.some((k) => k.includes('/node_modules/' + m + '/')))));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: path.join(__dirname, '../..'), env: { ...process.env, LOG_LEVEL: 'warn' } });
  expect(JSON.parse(out.toString().trim().split('\n').pop()!)).toEqual([]);
});
