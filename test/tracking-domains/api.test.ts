import { db } from '../../apps/core/src/db';
import { checkTrackingDomain, renewalTime } from '../../apps/core/src/tracking-domains';
import { caaRefusal, trackingDns } from '../../apps/core/src/tracking-domains/dns';
import { asAdmin, useApi } from '../helpers/api';
import { BrokenDnsServer, DnsServer } from '../helpers/dns-server';
import { makeAccount } from '../helpers/factories';
import { freePort, runAdmin } from '../helpers/processes';

/** The admin API of docs/tracking-domains.md without a CA: refusals, a name without the CNAME, a CAA that forbids the CA. */
const dns = new DnsServer(['test']);
const broken = new BrokenDnsServer();
beforeAll(async () => {
  await dns.start([
    { type: 'A', host: 'track.mail.test', address: '127.0.0.1' },
    { type: 'CNAME', host: 'track.elsewhere.test', target: 'other.mail.test' },
    { type: 'A', host: 'other.mail.test', address: '127.0.0.2' },
    { type: 'CNAME', host: 'track.strict.test', target: 'track.mail.test' },
    { type: 'CAA', host: 'strict.test', tag: 'issue', value: 'letsencrypt.org' },
    { type: 'CAA', host: 'strict.test', tag: 'iodef', value: 'mailto:security@strict.test' },
    { type: 'CAA', host: 'reports.test', tag: 'iodef', value: 'mailto:security@reports.test' },
    { type: 'CAA', host: 'allowed.test', tag: 'issue', value: 'letsencrypt.org' },
    { type: 'CAA', host: 'allowed.test', tag: 'issue', value: 'pebble.letsencrypt.org; validationmethods=http-01' },
    { type: 'CAA', host: 'closed.test', tag: 'issue', value: ';' },
    { type: 'CAA', host: 'sub.closed.test', tag: 'issue', value: 'pebble.letsencrypt.org' },
  ]);
  await broken.start();
  Object.assign(process.env, {
    DNS_SERVERS: dns.address,
    TRACK_HOSTNAME: 'track.mail.test',
    // nothing listens there: these tests must never reach an order
    ACME_DIRECTORY_URL: `https://127.0.0.1:${await freePort()}/dir`,
    ACME_CAA_IDENTITIES: 'pebble.letsencrypt.org',
  });
});
afterAll(async () => {
  await dns.stop();
  await broken.stop();
});
const app = useApi();
const admin = () => asAdmin(app.api);

describe('tracking domains: the admin API', () => {
  it('answers the CNAME to publish; bad input gets a JSON refusal with the right status and changes nothing', async () => {
    const account = await makeAccount();
    const added = await admin().post('/admin/api/tracking-domains').send({ account: account.id, name: ' Track.Bücher.test. ' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      ok: true,
      tracking_domain: { account: account.id, name: 'track.xn--bcher-kva.test', display_name: 'track.bücher.test', status: 'pending', record: { type: 'CNAME', host: 'track.xn--bcher-kva.test', value: 'track.mail.test' }, live: false, certificate: null },
    });
    const before = await db().trackingDomain.count();
    const other = await makeAccount();
    const refusals: [object, number, RegExp][] = [
      [{ account: account.id, name: 'https://track.x.test/' }, 400, /not a domain name/],
      [{ account: account.id, name: 'localhost' }, 400, /not a domain name/],
      [{ account: account.id }, 400, /name/],
      [{ account: 'x', name: 'track.y.test' }, 400, /account/],
      [{ account: 999999, name: 'track.y.test' }, 404, /account/],
      [{ account: account.id, name: 'TRACK.xn--bcher-kva.test' }, 409, /already has the tracking domain/],
      [{ account: other.id, name: 'track.bücher.test' }, 409, /another account's tracking domain/],
      [{ account: account.id, name: 'track.mail.test' }, 409, /TRACK_HOSTNAME/],
    ];
    for (const [body, status, error] of refusals) {
      const res = await admin().post('/admin/api/tracking-domains').send(body);
      expect({ body, status: res.status, ok: res.body.ok }).toEqual({ body, status, ok: false });
      expect(res.body.error).toMatch(error);
    }
    expect(await db().trackingDomain.count()).toBe(before);
    // the same name added twice at once: one 201, one 409, never a 500
    const both = await Promise.all([1, 2].map(() => admin().post('/admin/api/tracking-domains').send({ account: other.id, name: 'track.race.test' })));
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    const id = added.body.tracking_domain.id as number;
    expect((await admin().get(`/admin/api/tracking-domains/${id}`).query({ account: other.id })).status).toBe(404);
    expect((await admin().get('/admin/api/tracking-domains/abc')).status).toBe(400);
    expect((await admin().patch(`/admin/api/tracking-domains/${id}`).send({})).status).toBe(405);
    expect((await admin().delete(`/admin/api/tracking-domains/${id}`).query({ account: other.id })).status).toBe(404);
    const listed = await admin().get('/admin/api/tracking-domains').query({ account: account.id });
    expect(listed.body.tracking_domains.map((d: { id: number }) => d.id)).toEqual([id]);
    expect((await admin().delete(`/admin/api/tracking-domains/${id}`)).body).toEqual({ ok: true });
    expect((await admin().get(`/admin/api/tracking-domains/${id}`)).status).toBe(404);
  });

  it('a name without the CNAME stays pending, saying what DNS answered', async () => {
    const account = await makeAccount();
    const none = (await admin().post('/admin/api/tracking-domains').send({ account: account.id, name: 'track.nothing.test' })).body.tracking_domain;
    const checked = await admin().post(`/admin/api/tracking-domains/${none.id}/verify`);
    expect(checked.status).toBe(200);
    expect(checked.body.tracking_domain).toMatchObject({ status: 'pending', seen: [], reason: 'publish track.nothing.test CNAME track.mail.test: DNS has no CNAME for it', live: false });
    expect(checked.body.tracking_domain.checked_at).not.toBeNull();

    const wrong = (await admin().post('/admin/api/tracking-domains').send({ account: account.id, name: 'track.elsewhere.test' })).body.tracking_domain;
    const seen = (await admin().post(`/admin/api/tracking-domains/${wrong.id}/verify`)).body.tracking_domain;
    expect(seen).toMatchObject({ status: 'pending', seen: ['other.mail.test'], reason: 'publish track.elsewhere.test CNAME track.mail.test: DNS answered CNAME other.mail.test' });
    expect(await db().trackingDomain.findUniqueOrThrow({ where: { id: wrong.id } })).toMatchObject({ certificatePem: null, attempts: 0 });
  });

  it('a CAA record that allows another CA only fails the domain, saying so, without an order', async () => {
    const account = await makeAccount();
    const strict = (await admin().post('/admin/api/tracking-domains').send({ account: account.id, name: 'track.strict.test' })).body.tracking_domain;
    const checked = (await admin().post(`/admin/api/tracking-domains/${strict.id}/verify`)).body.tracking_domain;
    expect(checked).toMatchObject({
      status: 'failed',
      seen: ['track.mail.test'],
      reason: 'CAA at strict.test allows only letsencrypt.org: pebble.letsencrypt.org may not issue for track.strict.test; add a CAA issue record for it',
      attempts: 0,
      certificate: null,
    });
  });

  it('CAA: the closest record set decides; issue names the CA or not, iodef alone allows any CA, issue ";" none', async () => {
    const dnsLookup = trackingDns();
    const refusal = (name: string) => caaRefusal(dnsLookup, name, ['pebble.letsencrypt.org']);
    expect(await refusal('track.nothing.test')).toBeNull();
    expect(await refusal('track.reports.test')).toBeNull();
    expect(await refusal('track.allowed.test')).toBeNull();
    expect(await refusal('track.closed.test')).toBe('CAA at closed.test allows no CA: pebble.letsencrypt.org may not issue for track.closed.test; add a CAA issue record for it');
    // a record set nearer the name overrides its parent's
    expect(await refusal('track.sub.closed.test')).toBeNull();
    expect(await caaRefusal(dnsLookup, 'track.allowed.test', [])).toMatch(/its CAA identity is unknown: set ACME_CAA_IDENTITIES/);
  });

  it('a DNS server that does not answer leaves the status as it was, with the reason', async () => {
    const account = await makeAccount();
    const d = (await admin().post('/admin/api/tracking-domains').send({ account: account.id, name: 'track.elsewhere2.test' })).body.tracking_domain;
    await checkTrackingDomain(db(), d.id, trackingDns({ servers: [{ host: '127.0.0.1', port: Number(broken.address.split(':')[1]) }], timeoutMs: 200 }));
    const row = (await admin().get(`/admin/api/tracking-domains/${d.id}`)).body.tracking_domain;
    expect(row.status).toBe('pending');
    expect(row.reason).toBe('DNS did not answer for CNAME track.elsewhere2.test (SERVFAIL); the status stays as it was until DNS answers');
  });

  it('the CLI adds, checks, lists and removes tracking domains, with the same rules as the API', async () => {
    const account = await makeAccount();
    const added = await runAdmin('tracking-domain', 'add', '--account', String(account.id), '--name', 'track.cli.test');
    expect(added.code).toBe(0);
    expect(added.out.tracking_domain).toMatchObject({ name: 'track.cli.test', status: 'pending', record: { type: 'CNAME', value: 'track.mail.test' } });
    const id = String(added.out.tracking_domain.id);
    const checked = await runAdmin('tracking-domain', 'verify', id);
    expect(checked.out.tracking_domain).toMatchObject({ status: 'pending', reason: 'publish track.cli.test CNAME track.mail.test: DNS has no CNAME for it' });
    const listed = await runAdmin('tracking-domain', 'list', '--account', String(account.id));
    expect(listed.out.tracking_domains.map((d: { name: string }) => d.name)).toEqual(['track.cli.test']);
    const bad = await runAdmin('tracking-domain', 'add', '--account', String(account.id), '--name', 'not a name');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/not a domain name/);
    expect((await runAdmin('tracking-domain', 'remove', id)).code).toBe(0);
    expect(await db().trackingDomain.count({ where: { accountId: account.id } })).toBe(0);
    // five CLI processes, each starting tsx: generous on a busy 2-core machine
  }, 120_000);
});

describe('tracking domains: when a certificate is renewed', () => {
  it('30 days before expiry less up to a day; a short-lived one when a third of its life is left', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const day = 86400_000;
    for (let i = 0; i < 50; i++) {
      const long = now + 90 * day - renewalTime(new Date(now + 90 * day), now).getTime();
      expect(long).toBeGreaterThanOrEqual(30 * day);
      expect(long).toBeLessThanOrEqual(31 * day);
      const short = renewalTime(new Date(now + 6 * day), now).getTime() - now;
      // 6 days: renewed from day 4, less at most 0.6 of a day: never right after it was issued
      expect(short).toBeLessThanOrEqual(4 * day);
      expect(short).toBeGreaterThanOrEqual(3.4 * day);
    }
  });
});
