/**
 * `npm run deps`: dependency-cruiser's API with .dependency-cruiser.cjs over `apps` (the floors of apps/core/src, the
 * folder and file circles, the apps' imports). It prints each violation that .dependency-cruiser-known-violations.json
 * does not list and exits 1 when there is one. `npm run deps -- --baseline` rewrites that file with today's
 * violations. `--base <dir>` cruises `apps` under another folder (test/architecture/layers.test.ts's fixture),
 * `--known <file>` compares with another list, `--json` prints the new violations as a JSON array.
 *
 * The known violations are matched here (rule, from, to) rather than by dependency-cruiser's `--ignore-known`,
 * which softens module violations only: a folder circle would stay reported.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ICruiseResult, IViolation } from 'dependency-cruiser';

export type Violation = { rule: string; from: string; to: string; cycle?: string[] };
type Known = { from: string; to: string; rule: { name: string } };

const ROOT = path.join(__dirname, '..');
const KNOWN = path.join(ROOT, '.dependency-cruiser-known-violations.json');

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

async function cruiseApps(baseDir: string, outputType: 'json' | 'baseline'): Promise<string> {
  // an ES module only: imported at run time, since the project compiles to CommonJS
  const { cruise } = await import('dependency-cruiser');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const config = require(path.join(ROOT, '.dependency-cruiser.cjs'));
  const reported = await cruise(['apps'], { ...config.options, baseDir, validate: true, ruleSet: { forbidden: config.forbidden }, outputType });
  return typeof reported.output === 'string' ? reported.output : JSON.stringify(reported.output);
}

const key = (rule: string, from: string, to: string) => `${rule} ${from} ${to}`;
const shown = (v: Violation) => `${v.rule}: ${v.from} -> ${v.to}${v.cycle ? ` (circle: ${v.cycle.join(' -> ')})` : ''}`;

async function main(): Promise<void> {
  const baseDir = path.resolve(option('--base') ?? ROOT);
  if (process.argv.includes('--baseline')) {
    const baseline = await cruiseApps(baseDir, 'baseline');
    fs.writeFileSync(option('--known') ?? KNOWN, baseline.endsWith('\n') ? baseline : `${baseline}\n`);
    return;
  }
  const knownFile = option('--known') ?? KNOWN;
  const known = new Set((JSON.parse(fs.readFileSync(knownFile, 'utf8')) as Known[]).map((k) => key(k.rule.name, k.from, k.to)));
  const result = JSON.parse(await cruiseApps(baseDir, 'json')) as ICruiseResult;
  const all: Violation[] = result.summary.violations.map((v: IViolation) => ({
    rule: v.rule.name,
    from: v.from,
    to: v.to,
    ...(v.cycle ? { cycle: v.cycle.map((step) => step.name) } : {}),
  }));
  const fresh = all.filter((v) => !known.has(key(v.rule, v.from, v.to)));
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(fresh)}\n`);
    return;
  }
  for (const v of fresh) process.stdout.write(`${shown(v)}\n`);
  process.stdout.write(`${fresh.length} new violation(s); ${all.length - fresh.length} known (${path.relative(process.cwd(), knownFile)})\n`);
  if (fresh.length > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(2);
});
