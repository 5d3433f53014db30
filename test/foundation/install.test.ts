import fs from 'node:fs';
import path from 'node:path';

/**
 * `npm ci` on a fresh clone prints no warning: every locked package runs on the Node line the project names (engines,
 * .nvmrc, Dockerfile, README), and every package with an install script is approved or denied in `allowScripts`.
 */
const root = path.resolve(__dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string }; allowScripts?: Record<string, boolean> };
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string }; hasInstallScript?: boolean; optional?: boolean; dev?: boolean }> };
const LINE = Number(/^>=(\d+)/.exec(pkg.engines.node)?.[1]);

const nameOf = (location: string) => location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length);

it('one Node line everywhere: engines, .nvmrc, the Dockerfile and the README', () => {
  expect(LINE).toBeGreaterThan(0);
  expect(fs.readFileSync(path.join(root, '.nvmrc'), 'utf8').trim()).toBe(String(LINE));
  const images = [...fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8').matchAll(/^FROM node:(\d+)/gm)].map((m) => Number(m[1]));
  expect(images.length).toBeGreaterThan(0);
  expect(new Set(images)).toEqual(new Set([LINE]));
  expect(fs.readFileSync(path.join(root, 'README.md'), 'utf8')).toContain(`Node ${LINE}`);
});

it('no locked package needs a newer Node than the project names (npm ci: EBADENGINE)', () => {
  const needsMore = Object.entries(lock.packages)
    .filter(([location, p]) => location && p.engines?.node)
    .filter(([, p]) => [...p.engines!.node!.matchAll(/>=?\s*v?(\d+)/g)].some((m) => Number(m[1]) > LINE) && !/\|\|/.test(p.engines!.node!))
    .map(([location, p]) => `${nameOf(location)} needs node ${p.engines!.node}`);
  expect(needsMore).toEqual([]);
});

it('every package with an install script is approved or denied in allowScripts (npm ci: install-scripts)', () => {
  const allow = pkg.allowScripts ?? {};
  const uncovered = Object.entries(lock.packages)
    .filter(([location, p]) => location && p.hasInstallScript)
    .map(([location]) => nameOf(location))
    .filter((name) => !(name in allow));
  expect(uncovered).toEqual([]);
  // the scripts the project relies on run: esbuild's (checks its binary), prisma's, msgpackr-extract's (picks the prebuilt)
  expect(allow).toMatchObject({ esbuild: true, prisma: true, 'msgpackr-extract': true });
});
