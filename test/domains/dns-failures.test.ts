import { db } from '../../apps/core/src/db';
import { verifyDomain } from '../../apps/core/src/domains';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import { asAdmin, useApi } from '../helpers/api';
import { BrokenDnsServer, DnsServer } from '../helpers/dns-server';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { published } from './support';

// the service asks a DNS server that answers SERVFAIL, then nothing at all; the records live in a dnsmasq beside it
const broken = new BrokenDnsServer();
const good = new DnsServer(['test']);
beforeAll(async () => {
  await broken.start();
  await good.start();
  process.env.DNS_SERVERS = broken.address;
  process.env.DNS_TIMEOUT_MS = '200';
});
afterAll(async () => {
  await broken.stop();
  await good.stop();
});
const app = useApi();

it('a DNS server that answers SERVFAIL or times out leaves the status as it was, with the reason, and never a 500', async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'hi@steady.test' });
  const added = await asAdmin(app.api).post('/admin/api/domains').send({ account: account.id, name: 'steady.test' });
  const id = added.body.domain.id;

  // a pending domain stays pending
  const servfail = await asAdmin(app.api).post(`/admin/api/domains/${id}/verify`);
  expect(servfail.status).toBe(200);
  expect(servfail.body.domain).toMatchObject({ status: 'pending', reason: expect.stringMatching(/DNS did not answer for \w+ .*steady\.test \(SERVFAIL\); the status stays as it was/) });
  expect(servfail.body.domain.checked_at).not.toBeNull();

  // verified through a DNS that answers, then the service's DNS fails: still verified, no failure counted
  await good.publish(published(added.body.domain.records));
  const verified = await verifyDomain(db(), id, { dns: dnsLookup({ servers: [{ host: '127.0.0.1', port: good.port }] }) });
  expect(verified.status).toBe('verified');
  for (const mode of ['servfail', 'silent'] as const) {
    broken.mode = mode;
    const res = await asAdmin(app.api).post(`/admin/api/domains/${id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.domain).toMatchObject({ status: 'verified', reason: expect.stringContaining(mode === 'servfail' ? '(SERVFAIL)' : '(timed out)') });
    expect(res.body.domain.records.every((r: { status: string; required: boolean }) => !r.required || r.status === 'found')).toBe(true);
  }
  const row = await db().domain.findUniqueOrThrow({ where: { id } });
  expect(row).toMatchObject({ status: 'verified', failures: 0 });
  const shown = await asAdmin(app.api).get(`/admin/api/domains/${id}`);
  expect(shown.body.domain.reason).toContain('timed out');
});
