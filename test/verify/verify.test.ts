import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import { redis, rkey } from '../../apps/core/src/redis';
import { Verifier } from '../../apps/core/src/verify';
import { as, useApi } from '../helpers/api';
import { BrokenDnsServer, useDns, type ZoneRecord } from '../helpers/dns-server';
import { makeTenant } from '../helpers/factories';

// the service's resolver asks this dnsmasq (DNS_SERVERS), which answers for .test and .com and nothing else
const ZONE: ZoneRecord[] = [
  { type: 'MX', host: 'mx.test', target: 'mx1.mx.test' },
  { type: 'A', host: 'mx1.mx.test', address: '127.0.0.1' },
  { type: 'A', host: 'aonly.test', address: '127.0.0.1' },
  { type: 'MX', host: 'nullmx.test', target: '.', priority: 0 },
  { type: 'MX', host: 'xn--bcher-kva.test', target: 'mx1.mx.test' },
  { type: 'MX', host: 'mailinator.com', target: 'mx1.mx.test' },
  { type: 'MX', host: 'gmail.com', target: 'mx1.mx.test' },
  { type: 'MX', host: 'moving.test', target: 'mx1.mx.test' },
];
const dns = useDns(['test', 'com'], ZONE);
const app = useApi();

const verifyMany = (token: string, emails: unknown) => as(app.api, token).post('/api/v1/verify').send({ emails });
const byEmail = (results: { email: string }[]) => Object.fromEntries(results.map((r) => [r.email, r]));

it('answers each address with its result, reasons and checks: MX, A fallback, null MX, no records, malformed, role, disposable, free, IDNA', async () => {
  const { token } = await makeTenant();
  const emails = ['ann@mx.test', 'bob@aonly.test', 'cy@nullmx.test', 'di@none.test', 'not an address', 'info@mx.test', 'eve@mailinator.com', 'fay@gmail.com', 'josé@bücher.test', 'a..b@mx.test', '', '"ann smith"@mx.test', `${'l'.repeat(65)}@mx.test`, 'sales+eu@mx.test', 'bob@[127.0.0.1]', 'bob@mx'];
  const res = await verifyMany(token, emails);
  expect(res.status).toBe(200);
  expect(res.body.results.map((r: { email: string }) => r.email)).toEqual(emails);
  const r = byEmail(res.body.results);
  expect(r['ann@mx.test']).toEqual({
    email: 'ann@mx.test',
    result: 'deliverable',
    reasons: [],
    checks: { syntax: true, domain: 'mx.test', mx: 'mx', disposable: false, role: false, free: false, suppressed: false, history: 'none' },
  });
  expect(r['bob@aonly.test']).toMatchObject({ result: 'deliverable', checks: { mx: 'a' } });
  expect(r['cy@nullmx.test']).toMatchObject({ result: 'undeliverable', reasons: [expect.stringContaining('null MX (RFC 7505)')], checks: { mx: 'null_mx' } });
  expect(r['di@none.test']).toMatchObject({ result: 'undeliverable', reasons: [expect.stringContaining('no MX record and no address')], checks: { mx: 'none' } });
  expect(r['not an address']).toMatchObject({ result: 'undeliverable', reasons: ['malformed address: no @'], checks: { syntax: false, domain: '' } });
  expect(r['a..b@mx.test']).toMatchObject({ result: 'undeliverable', reasons: [expect.stringContaining('malformed address: the local part')] });
  expect(r['']).toMatchObject({ result: 'undeliverable', checks: { syntax: false } });
  expect(r['info@mx.test']).toMatchObject({ result: 'risky', reasons: ['a role address, not a person'], checks: { role: true } });
  expect(r['eve@mailinator.com']).toMatchObject({ result: 'risky', reasons: ['mailinator.com is a disposable email domain'], checks: { disposable: true } });
  expect(r['fay@gmail.com']).toMatchObject({ result: 'deliverable', checks: { free: true, disposable: false } });
  expect(r['"ann smith"@mx.test']).toMatchObject({ result: 'deliverable', checks: { syntax: true } });
  expect(r[`${'l'.repeat(65)}@mx.test`]).toMatchObject({ result: 'undeliverable', reasons: ['malformed address: the local part is longer than 64 octets'] });
  expect(r['sales+eu@mx.test']).toMatchObject({ result: 'risky', checks: { role: true } });
  expect(r['bob@[127.0.0.1]']).toMatchObject({ result: 'undeliverable', checks: { syntax: false } });
  expect(r['bob@mx']).toMatchObject({ result: 'undeliverable', reasons: [expect.stringContaining('not a valid host name')] });
  expect(r['josé@bücher.test']).toMatchObject({ result: 'deliverable', checks: { syntax: true, domain: 'xn--bcher-kva.test', mx: 'mx' } });
});

it('GET ?email= answers one item of the same shape; a malformed address is 200 undeliverable, a missing one 400', async () => {
  const { token } = await makeTenant();
  const one = await as(app.api, token).get('/api/v1/verify').query({ email: 'ann@mx.test' });
  expect(one.status).toBe(200);
  expect(one.body).toMatchObject({ ok: true, email: 'ann@mx.test', result: 'deliverable', checks: { mx: 'mx' } });
  const bad = await as(app.api, token).get('/api/v1/verify').query({ email: 'ann@@mx' });
  expect(bad.status).toBe(200);
  expect(bad.body).toMatchObject({ ok: true, result: 'undeliverable', checks: { syntax: false } });
  const missing = await as(app.api, token).get('/api/v1/verify');
  expect(missing.status).toBe(400);
  expect(missing.body).toEqual({ ok: false, error: expect.stringContaining('email') });
});

it('refuses 101 addresses, a missing list and a non-text item with 400, and looks nothing up', async () => {
  const { token } = await makeTenant();
  const many = Array.from({ length: 101 }, (_, i) => `p${i}@never-looked-up.test`);
  const res = await verifyMany(token, many);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ ok: false, error: 'emails: at most 100 addresses per request' });
  expect(await redis().exists(rkey('verify', 'domain', 'never-looked-up.test'))).toBe(0);
  expect((await verifyMany(token, undefined)).status).toBe(400);
  const item = await verifyMany(token, [42]);
  expect(item.status).toBe(400);
  expect(item.body.ok).toBe(false);
  const unauthenticated = await as(app.api, 'msk_nope').post('/api/v1/verify').send({ emails: ['a@mx.test'] });
  expect(unauthenticated.status).toBe(401);
});

it("reads the account's suppressions and bounces live: the day's cache never hides them", async () => {
  const tenant = await makeTenant();
  const first = await verifyMany(tenant.token, ['gone@mx.test', 'hard@mx.test', 'soft@mx.test']);
  expect(first.body.results.map((r: { result: string }) => r.result)).toEqual(['deliverable', 'deliverable', 'deliverable']);
  await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@mx.test', reason: 'bounced' } });
  const message = (to: string, bounce: object, status: 'bounced' | 'sent') =>
    db().message.create({
      data: { id: crypto.randomUUID(), accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'transactional', to, subject: 's', messageIdHeader: `<${crypto.randomUUID()}@mx.test>`, status, bounce },
    });
  await message('hard@mx.test', { reason: 'userunknown', dead: true }, 'bounced');
  await message('soft@mx.test', { reason: 'mailboxfull', dead: false }, 'sent');
  const r = byEmail((await verifyMany(tenant.token, ['gone@mx.test', 'hard@mx.test', 'soft@mx.test'])).body.results);
  expect(r['gone@mx.test']).toMatchObject({ result: 'undeliverable', reasons: ['suppressed in this account (bounced)'], checks: { suppressed: true } });
  expect(r['hard@mx.test']).toMatchObject({ result: 'undeliverable', reasons: ['a past hard bounce from this address'], checks: { history: 'hard_bounce' } });
  expect(r['soft@mx.test']).toMatchObject({ result: 'risky', reasons: ['a past soft bounce from this address'], checks: { history: 'soft_bounce' } });
  // another account knows nothing of them
  const other = await makeTenant();
  expect((await verifyMany(other.token, ['gone@mx.test'])).body.results[0].result).toBe('deliverable');
});

it("keeps a domain's answer for a day: DNS that changes meanwhile is not asked again", async () => {
  const { token } = await makeTenant();
  expect((await verifyMany(token, ['ann@moving.test'])).body.results[0].checks.mx).toBe('mx');
  const ttl = await redis().ttl(rkey('verify', 'domain', 'moving.test'));
  expect(ttl).toBeGreaterThan(86_000);
  expect(ttl).toBeLessThanOrEqual(86_400);
  await dns.publish(ZONE.filter((r) => r.host !== 'moving.test'));
  try {
    expect((await verifyMany(token, ['bob@moving.test'])).body.results[0]).toMatchObject({ result: 'deliverable', checks: { mx: 'mx' } });
    await redis().del(rkey('verify', 'domain', 'moving.test'));
    expect((await verifyMany(token, ['bob@moving.test'])).body.results[0]).toMatchObject({ result: 'undeliverable', checks: { mx: 'none' } });
  } finally {
    await dns.publish(ZONE);
  }
});

it('a DNS that times out or answers SERVFAIL makes the result unknown, with the reason, and is not cached', async () => {
  const broken = new BrokenDnsServer();
  await broken.start();
  try {
    const [host, port] = broken.address.split(':');
    const verifier = new Verifier({ dns: dnsLookup({ servers: [{ host: host!, port: Number(port) }], timeoutMs: 200 }), probe: null });
    const tenant = await makeTenant();
    for (const mode of ['silent', 'servfail'] as const) {
      broken.mode = mode;
      const [result] = await verifier.verify(db(), tenant.account.id, [`ann@${mode}.test`]);
      expect(result).toMatchObject({ result: 'unknown', reasons: [expect.stringContaining(mode === 'silent' ? '(timed out)' : '(SERVFAIL)')], checks: { mx: 'timeout' } });
      expect(await redis().exists(rkey('verify', 'domain', `${mode}.test`))).toBe(0);
    }
    // a suppression is still definite when DNS says nothing
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'x@silent.test', reason: 'complained' } });
    broken.mode = 'silent';
    expect((await verifier.verify(db(), tenant.account.id, ['x@silent.test']))[0]!.result).toBe('undeliverable');
  } finally {
    await broken.stop();
  }
});
