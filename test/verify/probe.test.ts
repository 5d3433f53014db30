import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { db } from '../../apps/core/src/db';
import { loadConfig } from '../../apps/core/src/config';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import { redis, rkey } from '../../apps/core/src/redis';
import { Verifier } from '../../apps/core/src/verify';
import { MailboxProbe } from '../../apps/core/src/verify/probe';
import { useApi } from '../helpers/api';
import { useDns, type ZoneRecord } from '../helpers/dns-server';
import { makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';

/**
 * The mailbox probe against MX servers of the test's own (smtp-server on loopback), found through the test's own DNS:
 * each domain has its MX host, and the server answers as that kind of MX would: accepting its one mailbox and refusing
 * others, refusing everything, accepting anything (catch-all), or greylisting (450).
 */
const KINDS = ['accept', 'refuse', 'catchall', 'greylist'] as const;
const ZONE: ZoneRecord[] = KINDS.flatMap((kind): ZoneRecord[] => [
  { type: 'MX', host: `${kind}.test`, target: `mx.${kind}.test` },
  { type: 'A', host: `mx.${kind}.test`, address: '127.0.0.1' },
]);
const dns = useDns(['test'], ZONE);
useApi();

/** What the MX saw: each connection's peer address and the recipients each asked about, and the most connections at once. */
const seen = { connections: [] as { from: string; rcpts: string[] }[], open: 0, mostOpen: 0, data: 0 };
const mx = new SMTPServer({
  disabledCommands: ['STARTTLS', 'AUTH'],
  authOptional: true,
  logger: false,
  onConnect: (session, callback) => {
    seen.connections.push({ from: session.remoteAddress, rcpts: [] });
    (session as unknown as { index: number }).index = seen.connections.length - 1;
    seen.mostOpen = Math.max(seen.mostOpen, ++seen.open);
    callback();
  },
  onClose: () => {
    seen.open--;
  },
  onRcptTo: (address, session, callback) => {
    seen.connections[(session as unknown as { index: number }).index]!.rcpts.push(address.address);
    const [local, domain] = address.address.split('@') as [string, string];
    const refuse = (code: number, message: string) => callback(Object.assign(new Error(message), { responseCode: code }));
    if (domain === 'accept.test') return local === 'ann' ? callback() : refuse(550, '5.1.1 no such user here');
    if (domain === 'refuse.test') return refuse(550, '5.7.1 relaying denied');
    if (domain === 'greylist.test') return refuse(450, '4.7.1 greylisted, try again later');
    callback();
  },
  onData: (stream, _session, callback) => {
    seen.data++;
    stream.resume().on('end', () => callback());
  },
});
let port = 0;
beforeAll(async () => {
  await new Promise<void>((resolve) => mx.listen(0, '127.0.0.1', resolve));
  port = (mx.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => mx.close(() => resolve())));

/** A verifier whose probe connects from 127.0.0.2 (its own host), to the test's MX port. */
const verifier = (perMinute = 100) =>
  new Verifier({
    dns: dnsLookup({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1_000 }),
    probe: new MailboxProbe({ from: 'probe@verifier.test', host: '127.0.0.2', port, perMinute }),
  });

beforeEach(async () => {
  seen.connections = [];
  seen.mostOpen = 0;
  await redis().del(rkey('verify', 'probes', Math.floor(Date.now() / 60_000)));
});

it('is off by default, and on only with both VERIFY_PROBE_FROM and VERIFY_PROBE_HOST', () => {
  const saved = { ...process.env };
  try {
    delete process.env.VERIFY_PROBE_FROM;
    delete process.env.VERIFY_PROBE_HOST;
    expect(loadConfig().verifyProbe).toBeNull();
    process.env.VERIFY_PROBE_FROM = 'probe@verifier.test';
    expect(() => loadConfig()).toThrow('the mailbox probe needs both VERIFY_PROBE_FROM and VERIFY_PROBE_HOST');
    process.env.VERIFY_PROBE_HOST = '127.0.0.2';
    expect(loadConfig().verifyProbe).toEqual({ from: 'probe@verifier.test', host: '127.0.0.2', port: 25, perMinute: 6 });
    process.env.VERIFY_PROBE_HOST = 'mx.example.com';
    expect(() => loadConfig()).toThrow(/VERIFY_PROBE_HOST must be an IP address/);
  } finally {
    process.env = saved;
  }
});

it('asks RCPT TO without DATA from its own host: an accepted mailbox, a refused one, a catch-all, greylisting as unknown', async () => {
  const tenant = await makeTenant();
  const v = verifier();
  const [ann, zed, refused, any, grey] = await v.verify(db(), tenant.account.id, ['ann@accept.test', 'zed@accept.test', 'bob@refuse.test', 'cy@catchall.test', 'di@greylist.test']);
  expect(ann).toMatchObject({ result: 'deliverable', reasons: [], checks: { mailbox: 'accepted', catch_all: false } });
  expect(zed).toMatchObject({ result: 'undeliverable', reasons: [expect.stringContaining('550 5.1.1 no such user here')], checks: { mailbox: 'rejected' } });
  expect(zed!.checks.catch_all).toBeUndefined();
  expect(refused).toMatchObject({ result: 'undeliverable', checks: { mailbox: 'rejected' } });
  expect(any).toMatchObject({ result: 'risky', reasons: [expect.stringContaining('catch-all')], checks: { mailbox: 'accepted', catch_all: true } });
  expect(grey).toMatchObject({ result: 'unknown', reasons: [expect.stringContaining('450 4.7.1 greylisted')], checks: { mailbox: 'unknown' } });
  await waitFor(() => seen.open === 0 || undefined, { what: 'the probe connections closed' });
  expect(seen.data).toBe(0);
  expect(seen.connections.every((c) => c.from === '127.0.0.2')).toBe(true);
  // the catch-all check asks a random address of the domain after an accepted one
  const annConnection = seen.connections.find((c) => c.rcpts[0] === 'ann@accept.test')!;
  expect(annConnection.rcpts).toEqual(['ann@accept.test', expect.stringMatching(/^[0-9a-f]{18}@accept\.test$/)]);
});

it('keeps a definite answer a day per address, but asks again after greylisting', async () => {
  const tenant = await makeTenant();
  const v = verifier();
  // the test before asked about ann@accept.test: its answer is kept
  await v.verify(db(), tenant.account.id, ['ann@accept.test', 'di@greylist.test']);
  expect(seen.connections.map((c) => c.rcpts[0])).toEqual(['di@greylist.test']);
  await redis().del(rkey('verify', 'address', 'ann@accept.test'));
  seen.connections = [];
  await v.verify(db(), tenant.account.id, ['ann@accept.test', 'di@greylist.test']);
  expect(seen.connections).toHaveLength(2);
  expect(await redis().ttl(rkey('verify', 'address', 'ann@accept.test'))).toBeGreaterThan(86_000);
  const again = await v.verify(db(), tenant.account.id, ['ann@accept.test', 'di@greylist.test']);
  expect(again.map((r) => r.checks.mailbox)).toEqual(['accepted', 'unknown']);
  expect(seen.connections.map((c) => c.rcpts[0])).toEqual(expect.arrayContaining(['di@greylist.test']));
  expect(seen.connections.filter((c) => c.rcpts[0] === 'ann@accept.test')).toHaveLength(1);
  expect(seen.connections.filter((c) => c.rcpts[0] === 'di@greylist.test')).toHaveLength(2);
  expect(await redis().exists(rkey('verify', 'address', 'di@greylist.test'))).toBe(0);
});

it('holds one connection per MX at a time, and makes no more than its allowance a minute', async () => {
  const tenant = await makeTenant();
  // away from a minute's turn, so the allowance's counter is one minute's
  await waitFor(() => (Date.now() % 60_000 < 50_000 ? true : undefined), { timeout: 15_000, what: 'a fresh minute' });
  const many = Array.from({ length: 4 }, (_, i) => `x${i}@catchall.test`);
  await verifier().verify(db(), tenant.account.id, many);
  expect(seen.connections).toHaveLength(4);
  expect(seen.mostOpen).toBe(1);

  await redis().del(rkey('verify', 'probes', Math.floor(Date.now() / 60_000)));
  seen.connections = [];
  const limited = await verifier(2).verify(db(), tenant.account.id, ['y0@refuse.test', 'y1@refuse.test', 'y2@refuse.test']);
  expect(seen.connections).toHaveLength(2);
  // past the allowance the address is answered without the mailbox check, never held
  expect(limited.filter((r) => r.checks.mailbox === undefined)).toHaveLength(1);
});

it('does not probe an address the account already knows is dead', async () => {
  const tenant = await makeTenant();
  await db().suppression.create({ data: { accountId: tenant.account.id, email: 'ann@accept.test', reason: 'bounced' } });
  const [ann] = await verifier().verify(db(), tenant.account.id, ['ann@accept.test']);
  expect(ann).toMatchObject({ result: 'undeliverable', checks: { suppressed: true } });
  expect(ann!.checks.mailbox).toBeUndefined();
  expect(seen.connections).toHaveLength(0);
});
