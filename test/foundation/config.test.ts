import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, parseSecretKey } from '../../apps/core/src/config';

/** loadConfig() reads process.env: each case sets what it needs and restores the rest. */
function withEnv<T>(env: Record<string, string | undefined>, run: () => T): T {
  const saved = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  try {
    return run();
  } finally {
    process.env = saved;
  }
}

describe('configuration', () => {
  it("has the defaults of the README's configuration table", () => {
    const cfg = withEnv({ PORT: undefined, DATABASE_URL: undefined, REDIS_URL: undefined, PUBLIC_URL: undefined, WORKER_CONCURRENCY: undefined }, loadConfig);
    expect(cfg).toMatchObject({
      port: 3000,
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/mailservice',
      redisUrl: 'redis://127.0.0.1:6379',
      publicUrl: 'http://localhost:3000',
      workerConcurrency: 20,
    });
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it('reads the tracking-domain settings: TRACK_HOSTNAME from PUBLIC_URL, links on HTTPS_PORT, a bad ACME_DIRECTORY_URL refused', () => {
    const tracking = (env: Record<string, string | undefined>) =>
      withEnv({ PUBLIC_URL: 'https://Mail.Example.com', HTTPS_PORT: undefined, TRACK_HOSTNAME: undefined, TRACK_LINK_PORT: undefined, ACME_DIRECTORY_URL: undefined, ...env }, loadConfig).tracking;
    expect(tracking({})).toMatchObject({ httpsPort: null, linkPort: 443, hostname: 'mail.example.com', acmeDirectoryUrl: '' });
    expect(tracking({ HTTPS_PORT: '8443', TRACK_HOSTNAME: 'track.example.com' })).toMatchObject({ httpsPort: 8443, linkPort: 8443, hostname: 'track.example.com' });
    expect(() => tracking({ ACME_DIRECTORY_URL: 'not a url' })).toThrow(/^ACME_DIRECTORY_URL is not a valid URL$/);
    expect(() => tracking({ HTTPS_PORT: 'x' })).toThrow(/^HTTPS_PORT must be a whole number/);
  });

  it('derives PUBLIC_URL from PORT', () => {
    expect(withEnv({ PORT: '8080', PUBLIC_URL: undefined }, loadConfig).publicUrl).toBe('http://localhost:8080');
  });

  it('generates the admin token and secret key once into a file of mode 0600 and reuses them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-state-'));
    const env = { ADMIN_TOKEN: undefined, SECRET_KEY: undefined, STATE_DIR: dir };
    const first = withEnv(env, loadConfig);
    const second = withEnv(env, loadConfig);
    expect(first.adminToken).toMatch(/^adm_/);
    expect(second.adminToken).toBe(first.adminToken);
    expect(second.secretKey.equals(first.secretKey)).toBe(true);
    expect(fs.statSync(path.join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
  });

  it('refuses to start in production without SECRET_KEY, unless STATE_DIR names where to generate it', () => {
    expect(() => withEnv({ NODE_ENV: 'production', SECRET_KEY: undefined, STATE_DIR: undefined }, loadConfig)).toThrow(ConfigError);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-state-'));
    const kept = withEnv({ NODE_ENV: 'production', SECRET_KEY: undefined, ADMIN_TOKEN: undefined, STATE_DIR: dir }, loadConfig);
    expect(kept.secretKey).toHaveLength(32);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'secrets.json'), 'utf8')).adminToken).toBe(kept.adminToken);
  });

  it('refuses to start in production with an admin token of fewer than 32 characters, or not random, saying why', () => {
    const production = (token: string) => () => withEnv({ NODE_ENV: 'production', ADMIN_TOKEN: token }, loadConfig);
    // the test setup's token: fine outside production
    expect(production('test-admin-token-0123456789')).toThrow(/^ADMIN_TOKEN must be at least 32 random characters, it has 27 \(generate one with: openssl rand -hex 32\)$/);
    expect(production('abcd'.repeat(10))).toThrow(/^ADMIN_TOKEN must be random/);
    const good = 'f3a9c0d17be24e58a6b1c9d0e7f23a4b';
    expect(withEnv({ NODE_ENV: 'production', ADMIN_TOKEN: good }, loadConfig)).toMatchObject({ adminToken: good, adminTokenWeakness: null });
    // outside production the same weak token starts, with the reason kept for the start-up warning
    expect(withEnv({ NODE_ENV: 'development', ADMIN_TOKEN: 'test-admin-token-0123456789' }, loadConfig).adminTokenWeakness).toMatch(/at least 32/);
  });

  it('warns at start, outside production, when the admin token is weak', async () => {
    const { logger } = await import('../../apps/core/src/logger');
    const { preflight } = await import('../../apps/core/src/startup');
    const warn = jest.spyOn(logger, 'warn');
    try {
      await preflight('api');
      expect(warn.mock.calls.map((call) => call[1])).toContainEqual(expect.stringMatching(/^ADMIN_TOKEN must be at least 32 random characters, it has 27: .*refused when NODE_ENV=production$/));
    } finally {
      warn.mockRestore();
    }
  });

  it.each([
    ['WORKER_CONCURRENCY', '0'],
    ['PORT', '70000'],
    ['REDIS_URL', 'http://x'],
    ['PUBLIC_URL', 'ftp://x'],
    ['ADMIN_TOKEN', 'short'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => withEnv({ [name]: value }, loadConfig)).toThrow(ConfigError);
  });

  it('accepts a SECRET_KEY of 64 hex characters as its 32 bytes', () => {
    expect(parseSecretKey('ab'.repeat(32))).toEqual(Buffer.alloc(32, 0xab));
    expect(() => parseSecretKey('short')).toThrow(ConfigError);
  });
});
