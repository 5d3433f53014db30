import { ConfigError, loadConfig } from '../../apps/core/src/config';

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

describe('the sending-domain settings', () => {
  it('require a verified domain by default only under NODE_ENV=production', () => {
    const production = { NODE_ENV: 'production', ADMIN_TOKEN: 'x'.repeat(8) + 'abcdefghijklmnopqrstuvwxyz012345', REQUIRE_VERIFIED_DOMAIN: undefined };
    expect(withEnv(production, loadConfig).requireVerifiedDomain).toBe(true);
    expect(withEnv({ ...production, REQUIRE_VERIFIED_DOMAIN: 'false' }, loadConfig).requireVerifiedDomain).toBe(false);
    expect(withEnv({ NODE_ENV: 'development', REQUIRE_VERIFIED_DOMAIN: undefined }, loadConfig).requireVerifiedDomain).toBe(false);
    expect(withEnv({ REQUIRE_VERIFIED_DOMAIN: 'true' }, loadConfig).requireVerifiedDomain).toBe(true);
  });

  it('read DNS_SERVERS as host:port (53 by default), the timeouts and the host names, and refuse nonsense in one line', () => {
    const cfg = withEnv({ DNS_SERVERS: '127.0.0.1:5353, [::1]:53, 10.0.0.2', DNS_TIMEOUT_MS: '500', DOMAIN_RECHECK_HOURS: '0.5', SPF_INCLUDE: 'SPF.Relay.example.', RETURN_PATH_HOST: 'bounce.relay.example' }, loadConfig);
    expect(cfg).toMatchObject({
      dnsServers: [{ host: '127.0.0.1', port: 5353 }, { host: '::1', port: 53 }, { host: '10.0.0.2', port: 53 }],
      dnsTimeoutMs: 500,
      domainRecheckHours: 0.5,
      spfInclude: 'spf.relay.example',
      returnPathHost: 'bounce.relay.example',
    });
    expect(withEnv({ DNS_SERVERS: undefined }, loadConfig)).toMatchObject({ dnsServers: null, dnsTimeoutMs: 3000, domainRecheckHours: 6, spfInclude: '', returnPathHost: '' });
    for (const [name, value] of [['DNS_SERVERS', '1.2.3.4:99999'], ['DNS_TIMEOUT_MS', 'soon'], ['DOMAIN_RECHECK_HOURS', '0'], ['SPF_INCLUDE', 'not a host'], ['REQUIRE_VERIFIED_DOMAIN', 'maybe']]) {
      expect(() => withEnv({ [name!]: value }, loadConfig)).toThrow(ConfigError);
      expect(() => withEnv({ [name!]: value }, loadConfig)).toThrow(new RegExp(name!));
    }
  });
});
