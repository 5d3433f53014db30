import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { databaseUrl, runId } from '../setup/shared';
import { freePort, ROOT, runTs, waitForHttp, type Proc } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/** The shell block under README.md's "## Try it", as written there. */
function tryItBlock(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Try it'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README.md: no sh block under "## Try it"');
  return block[1]!;
}

/**
 * The environment docker-compose.yml gives the API, each `${NAME:-default}` read as compose reads it with no .env: the
 * settings that decide what a send may do (NODE_ENV, REQUIRE_VERIFIED_DOMAIN...), without the container's addresses.
 */
function composeEnvironment(): Record<string, string> {
  const yaml = require('js-yaml') as { load(text: string): unknown };
  const compose = yaml.load(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: { api: { environment: Record<string, string> } } };
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(compose.services.api.environment)) {
    if (['DATABASE_URL', 'REDIS_URL', 'PUBLIC_URL', 'STATE_DIR', 'WORKER_METRICS_PORT'].includes(name)) continue;
    env[name] = String(value).replace(/\$\{[A-Z_0-9]+:?-([^}]*)\}/g, '$1');
  }
  return env;
}

describe("README's Try-it", () => {
  it('pasted as written (only the ports moved), with `npm run sink` running, ends with the email at the catcher', async () => {
    await tryIt({ NODE_ENV: 'development' });
  }, 120_000);

  it("works under docker-compose.yml's environment too (NODE_ENV=production): no 403 for the unverified acme.test", async () => {
    const env = composeEnvironment();
    expect(env.NODE_ENV).toBe('production');
    await tryIt(env);
  }, 120_000);
});

async function tryIt(settings: Record<string, string>): Promise<void> {
  const [apiPort, smtpPort, httpPort] = [await freePort(), await freePort(), await freePort()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'try-it-'));
  // a fresh database (account 1 and mailbox 1 are the first rows) and no admin token: the service generates it
  const env = {
    ADMIN_TOKEN: '',
    SECRET_KEY: '',
    ...settings,
    PORT: String(apiPort),
    DATABASE_URL: databaseUrl(`ms_test_${runId()}_tryit${Math.floor(Math.random() * 1e6)}`),
    STATE_DIR: path.join(dir, '.mailservice'),
  };
  const procs: Proc[] = [];
  try {
    const sink = runTs('scripts/sink.ts', [], { SINK_SMTP_PORT: String(smtpPort), SINK_HTTP_PORT: String(httpPort) });
    procs.push(sink);
    const api = runTs('apps/api/src/server.ts', [], env);
    procs.push(api);
    await waitForHttp(sink, `http://127.0.0.1:${httpPort}/messages`);
    await waitForHttp(api, `http://127.0.0.1:${apiPort}/healthz`, 60_000);
    procs.push(runTs('apps/worker/src/main.ts', [], env));

    const script = tryItBlock()
      .replaceAll('localhost:3000', `127.0.0.1:${apiPort}`)
      .replaceAll('localhost:1080', `127.0.0.1:${httpPort}`)
      .replaceAll('127.0.0.1:1025', `127.0.0.1:${smtpPort}`);
    expect(script).toContain('/api/v1/send');
    const run = spawnSync('bash', ['--norc', '--noprofile', '-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH! }, timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/"status":"queued"|"id":/);

    const caught = await waitFor(
      async () => {
        const answer = (await (await fetch(`http://127.0.0.1:${httpPort}/messages`)).json()) as { messages: { to: string[]; subject: string; from: string }[] };
        return answer.messages.find((m) => m.to.includes('someone@example.com'));
      },
      { timeout: 30_000, what: 'the Try-it email at the sink' },
    );
    expect(caught).toMatchObject({ from: 'hello@acme.test', subject: 'Hello' });
    // the terminal shows it too
    await waitFor(() => sink.stdout().includes('to someone@example.com: "Hello"'), { what: 'the sink printing the email' });
    const html = await (await fetch(`http://127.0.0.1:${httpPort}/`)).text();
    expect(html).toContain('Hello');
  } finally {
    for (const proc of procs) proc.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.exited));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
