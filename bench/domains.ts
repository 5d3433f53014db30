/**
 * The domains phase of `npm run bench` (BENCH_ONLY=domains): DOMAINS_COUNT (1,000) sending domains, their records
 * published in Debian's dnsmasq on a loopback port, all checked at once by the worker's periodic check
 * (recheckDueDomains) through DNS_SERVERS, timed from the first question to the last status written. Target: under
 * 10 s. The keys are made once and shared by the rows (making 1,000 RSA keys is setup, not the check).
 *
 * run.ts calls `domainsPhase(env)`, which runs this file as its own process on the phase's database (the
 * configuration is read once per process) and reads the figures it prints.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promises as dns } from 'node:dns';

const COUNT = Number(process.env.DOMAINS_COUNT ?? 1000);
const ROOT = path.resolve(__dirname, '..');

export interface DomainsFigures {
  domains: number;
  seconds: number;
  verified: number;
  dnsQuestions: number;
}

export async function domainsPhase(env: Record<string, string>): Promise<DomainsFigures> {
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, 'run'], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`bench: the domains phase exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop()!) as DomainsFigures;
}

async function freeUdpPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const quoted = (value: string) => (value.match(/.{1,255}/g) ?? []).map((s) => `"${s}"`).join(',');

async function run(): Promise<void> {
  const port = await freeUdpPort();
  process.env.DNS_SERVERS = `127.0.0.1:${port}`;
  const { migrate } = await import('../apps/core/src/migrate');
  const { config } = await import('../apps/core/src/config');
  const { db, closeDb } = await import('../apps/core/src/db');
  const { generateKeyPairs } = await import('../apps/core/src/domains/keys');
  const { expectedRecords } = await import('../apps/core/src/domains/records');
  const { recheckDueDomains } = await import('../apps/core/src/domains/schedule');
  await migrate(config().databaseUrl);

  const account = await db().account.create({ data: { name: 'bench domains' } });
  await db().mailbox.create({ data: { accountId: account.id, address: 'bench@d0.bench.test', smtpHost: '127.0.0.1', smtpPort: 25 } });
  const pair = generateKeyPairs('msbench');
  const names = Array.from({ length: COUNT }, (_, i) => `d${i}.bench.test`);
  await db().domain.createMany({ data: names.map((name) => ({ accountId: account.id, name, nextCheckAt: new Date(Date.now() + 3600_000) })) });
  const rows = await db().domain.findMany({ where: { accountId: account.id }, select: { id: true, name: true } });
  await db().domainKey.createMany({ data: rows.map((r) => ({ domainId: r.id, ...pair, state: 'active' as const, activatedAt: new Date() })) });

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-bench-dns-'));
  const lines = ['local=/bench.test/', 'txt-record=ready.bench.test,"1"'];
  for (const name of names) {
    const records = expectedRecords({ domain: name, keys: [{ selector: pair.selector, state: 'active', rsaPublicKey: pair.rsaPublicKey, ed25519PublicKey: pair.ed25519PublicKey, retiredAt: null }], relays: ['127.0.0.1'], spfInclude: '', returnPathTarget: null });
    for (const r of records) lines.push(`txt-record=${r.host},${quoted(r.value)}`);
  }
  fs.writeFileSync(path.join(dir, 'dnsmasq.conf'), lines.join('\n') + '\n');
  const dnsmasq = spawn('/usr/sbin/dnsmasq', ['--no-daemon', `--port=${port}`, '--listen-address=127.0.0.1', '--bind-interfaces', '--no-resolv', '--no-hosts', '--pid-file=', '--log-facility=-', `--conf-file=${path.join(dir, 'dnsmasq.conf')}`], { stdio: 'ignore' });
  try {
    const resolver = new dns.Resolver({ timeout: 200, tries: 1 });
    resolver.setServers([`127.0.0.1:${port}`]);
    for (let i = 0; ; i++) {
      if ((await resolver.resolveTxt('ready.bench.test').catch(() => [])).length) break;
      if (i > 100) throw new Error('dnsmasq does not answer');
      await new Promise((r) => setTimeout(r, 100));
    }
    await db().domain.updateMany({ where: { accountId: account.id }, data: { nextCheckAt: new Date(Date.now() - 1000) } });
    const t0 = performance.now();
    const checked = await recheckDueDomains(db());
    const seconds = (performance.now() - t0) / 1000;
    const verified = await db().domain.count({ where: { accountId: account.id, status: 'verified' } });
    // per domain: 2 DKIM TXT, the SPF TXT (twice: counted, then evaluated), the DMARC TXT
    console.log(JSON.stringify({ domains: checked, seconds: +seconds.toFixed(2), verified, dnsQuestions: checked * 5 } satisfies DomainsFigures));
  } finally {
    dnsmasq.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
    await closeDb();
  }
}

if (process.argv[2] === 'run') {
  run().catch((err: Error) => {
    console.error(`bench domains: ${err.message}`);
    process.exit(1);
  });
}
