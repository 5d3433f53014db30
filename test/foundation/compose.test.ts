import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { API_NODE_FLAGS, SMTP_NODE_FLAGS, WORKER_NODE_FLAGS } from '../../scripts/node-options';
import { ROOT } from '../helpers/processes';

// js-yaml is in node_modules through jest (@istanbuljs/load-nyc-config); it only reads this file
const yaml = require('js-yaml') as { load(text: string): unknown };

interface Service {
  image?: string;
  build?: unknown;
  ports?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, unknown>;
  command?: string[];
}

const text = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = yaml.load(text) as { services: Record<string, Service>; volumes: Record<string, unknown> };

describe('docker-compose.yml starts with no .env', () => {
  it('every ${VARIABLE} has a default: none is required, none left empty by mistake', () => {
    const uses = [...text.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1]!);
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) expect({ use, defaulted: /^[A-Z_][A-Z0-9_]*:?-/.test(use) }).toEqual({ use, defaulted: true });
    // a bare $VARIABLE (without braces) cannot carry a default either
    expect(text.replace(/\$\{[^}]*\}/g, '').match(/\$[A-Za-z_]/g)).toBeNull();
  });

  it('has the services and ports the README names, and the API and worker share the state volume of generated secrets', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'grafana', 'mailpit', 'mx', 'postgres', 'prometheus', 'redis', 'smtp', 'worker']);
    // the monitoring pair starts only when asked for (`--profile monitoring`), its files from docs/grafana
    for (const name of ['grafana', 'prometheus']) {
      expect((compose.services[name] as Service & { profiles?: string[] }).profiles).toEqual(['monitoring']);
      for (const volume of compose.services[name]!.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect({ volume, exists: fs.existsSync(path.join(ROOT, source)) }).toEqual({ volume, exists: true });
      }
    }
    const published = (name: string) => (compose.services[name]!.ports ?? []).map((p) => p.split(':').at(-1));
    expect(published('api')).toContain('3000');
    expect(published('mailpit')).toEqual(expect.arrayContaining(['8025', '1025']));
    expect(published('postgres')).toContain('5432');
    expect(published('redis')).toContain('6379');
    // the MX (docs/mx.md) on 25, started only when asked for (`--profile mx`)
    expect(published('mx')).toEqual(['25']);
    expect((compose.services.mx as Service & { profiles?: string[] }).profiles).toEqual(['mx']);
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Docker compose'));
    expect(section).toContain('smtp://mailpit:1025');
    for (const name of ['api', 'worker']) {
      const service = compose.services[name]!;
      expect(service.build).toBeDefined();
      const stateDir = service.environment!.STATE_DIR!;
      expect(service.volumes).toContain(`state:${stateDir}`);
      expect(section).toContain(`${stateDir}/secrets.json`);
    }
    expect(compose.volumes).toHaveProperty('state');
    // the image lets its user write there: the volume is created from a directory the service owns
    expect(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).toContain(`chown node:node ${compose.services.api!.environment!.STATE_DIR}`);
  });

  it('sends from an unverified domain as the README says (the Try-it), in every service that accepts mail, and says how to turn it off', () => {
    // the API and the worker share x-app's environment; the smtp service has its own
    for (const name of ['api', 'worker', 'smtp']) expect({ name, value: compose.services[name]!.environment!.REQUIRE_VERIFIED_DOMAIN }).toEqual({ name, value: '${REQUIRE_VERIFIED_DOMAIN:-false}' });
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Docker compose'));
    expect(section).toContain('REQUIRE_VERIFIED_DOMAIN=false');
    expect(section).toContain('REQUIRE_VERIFIED_DOMAIN=true');
  });

  it('the image and the compose file run the API and the worker with the V8 flags npm start and the bench give them', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(cmd!)).toEqual(['node', ...API_NODE_FLAGS, 'dist/apps/api/src/server.js']);
    expect(compose.services.api!.command).toEqual(['node', ...API_NODE_FLAGS, 'dist/apps/api/src/server.js']);
    expect(compose.services.worker!.command).toEqual(['node', ...WORKER_NODE_FLAGS, 'dist/apps/worker/src/main.js']);
    expect(compose.services.smtp!.command).toEqual(['node', ...SMTP_NODE_FLAGS, 'dist/apps/smtp/src/main.js']);
  });

  it('`docker compose config` accepts it with an empty environment, where Docker Compose is installed', () => {
    const compose = (args: string[]) => spawnSync('docker', ['compose', ...args], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH! }, timeout: 30_000 });
    if (compose(['version']).status !== 0) return; // no Compose on this machine: the two checks above stand for it
    const run = compose(['config', '--quiet']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
