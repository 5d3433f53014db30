import { db } from '../../apps/core/src/db';
import { mxConfig } from '../../apps/core/src/config-sections';
import { recheckDueDomains } from '../../apps/core/src/domains/schedule';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import { ROUTES_CACHE_MS } from '../../apps/core/src/mx/recipients';
import request from 'supertest';
import { ADMIN_TOKEN, asAdmin, useApi } from '../helpers/api';
import { useDns, type ZoneRecord } from '../helpers/dns-server';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { waitFor } from '../helpers/wait';
import { published } from '../domains/support';
import { runClient } from '../smtp/support';
import { useMx } from './support';

/**
 * An inbound domain's mail is taken only once a check has found its MX record (docs/mx.md, "DNS"): before,
 * the MX refuses it at RCPT as it refuses a domain that is not inbound here; a check on demand (verify) or the worker's
 * periodic one (a domain just turned inbound is due at once) opens it.
 */
jest.setTimeout(90_000);

// read by the API (the records it lists and checks)
process.env.MX_HOSTNAME = 'mx.service.test';

const dns = useDns(['test']);
const app = useApi();
const mx = useMx(dns);
/** a development MX (MX_REQUIRE_MX_RECORD=false): no public record to find */
const devMx = useMx(dns, { requireMxRecord: false });
const admin = () => asAdmin(app.api);
const resolver = () => dnsLookup({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 2000 });

/** everything the file's domains publish: dnsmasq answers the zone as last published */
const zone: ZoneRecord[] = [];
const publish = (...records: ZoneRecord[]) => {
  zone.push(...records);
  return dns.publish(zone);
};
const ourMx = (host: string): ZoneRecord => ({ type: 'MX', host, target: 'mx.service.test', priority: 10 });
const withoutMx = (host: string) => zone.splice(0, zone.length, ...zone.filter((r) => !(r.type === 'MX' && r.host === host)));

const swaks = (port: number, to: string) => runClient('swaks', ['--server', `127.0.0.1:${port}`, '--helo', 'client.test', '--from', 'ann@sender.test', '--to', to]);
const stored = (accountId: number) => db().mxMessage.count({ where: { accountId } });

/** A verified domain with its sending records published, turned inbound with a route for every address. */
async function inboundDomain(name: string) {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: `news@${name}` });
  const added = await admin().post('/admin/api/domains').send({ account: account.id, name });
  const id = added.body.domain.id as number;
  await publish(...published(added.body.domain.records));
  expect((await admin().post(`/admin/api/domains/${id}/verify`)).body.domain.status).toBe('verified');
  const turned = await admin().patch(`/admin/api/domains/${id}`).send({ inbound: true });
  expect(turned.status).toBe(200);
  expect((await admin().post('/admin/api/routes').send({ account: account.id, domain: name, match: '*', action: 'webhook' })).status).toBe(201);
  return { account, id, turned: turned.body.domain };
}

/** The console's page of the domain, signed in as the operator. */
async function consolePage(id: number): Promise<string> {
  const agent = request.agent(app.api.app);
  const signin = await agent.get('/admin/signin');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
  await agent.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }).expect(303);
  return (await agent.get(`/admin/domains/${id}`).expect(200)).text;
}

/** The MX keeps a domain's answer ROUTES_CACHE_MS: sends until the 250 (each refusal before it stores nothing). */
const takenWithin = (port: number, to: string) =>
  waitFor(async () => {
    const sent = await swaks(port, to);
    return /<- {2}250 2\.0\.0 OK: [0-9a-f-]{36}/.test(sent.out) && sent;
  }, { timeout: ROUTES_CACHE_MS + 10_000, interval: 500, what: `the MX to take mail for ${to}` });

it('refuses an inbound domain\'s mail 550 5.7.1 at RCPT until a check on demand finds its MX record, then takes it; turned off and on, it waits for a check again', async () => {
  const { account, id, turned } = await inboundDomain('waits-mx.test');
  expect(turned).toMatchObject({ inbound: true, mx_found_at: null });
  expect(await consolePage(id)).toContain('Inbound: the MX refuses its mail until a check finds the Inbound MX record below');

  // no MX record: refused at RCPT as a domain that is not inbound here, no DATA, nothing stored
  const before = await swaks(mx.port, 'hello@waits-mx.test');
  expect(before.code).not.toBe(0);
  expect(before.out).toMatch(/<\*\* 550 5\.7\.1 waits-mx\.test does not receive mail here/);
  expect(before.out).not.toMatch(/~> DATA/);

  // the record names another host: a check says so, and the mail is still refused
  await publish({ type: 'MX', host: 'waits-mx.test', target: 'mx.elsewhere.test', priority: 10 });
  const wrong = await admin().post(`/admin/api/domains/${id}/verify`);
  expect(wrong.body.domain).toMatchObject({ mx_found_at: null });
  expect(wrong.body.domain.records.find((r: { purpose: string }) => r.purpose === 'inbound')).toMatchObject({ status: 'wrong' });
  await new Promise((resolve) => setTimeout(resolve, ROUTES_CACHE_MS + 500));
  expect((await swaks(mx.port, 'hello@waits-mx.test')).out).toMatch(/<\*\* 550 5\.7\.1 waits-mx\.test does not receive mail here/);
  expect(await stored(account.id)).toBe(0);

  // pointed at this MX: the check finds it, and the MX takes the domain's mail (within its cache's 5 seconds)
  withoutMx('waits-mx.test');
  await publish(ourMx('waits-mx.test'));
  const found = await admin().post(`/admin/api/domains/${id}/verify`);
  expect(found.body.domain.records.find((r: { purpose: string }) => r.purpose === 'inbound')).toMatchObject({ status: 'found' });
  const foundAt = found.body.domain.mx_found_at as string;
  expect(Date.parse(foundAt)).toBeGreaterThan(Date.now() - 60_000);
  await takenWithin(mx.port, 'hello@waits-mx.test');
  expect(await stored(account.id)).toBe(1);
  expect(await consolePage(id)).toContain('Inbound: the MX takes its mail (its MX record found');

  // once found, a later check that sees the record moved keeps it open (senders' resolvers still hold the old MX)
  withoutMx('waits-mx.test');
  await publish({ type: 'MX', host: 'waits-mx.test', target: 'mx.elsewhere.test', priority: 10 });
  expect((await admin().post(`/admin/api/domains/${id}/verify`)).body.domain.mx_found_at).toBe(foundAt);

  // turned off and on again: the record must be found again before mail is taken
  await admin().patch(`/admin/api/domains/${id}`).send({ inbound: false });
  const again = await admin().patch(`/admin/api/domains/${id}`).send({ inbound: true });
  expect(again.body.domain.mx_found_at).toBeNull();
  await new Promise((resolve) => setTimeout(resolve, ROUTES_CACHE_MS + 500));
  expect((await swaks(mx.port, 'hello@waits-mx.test')).out).toMatch(/<\*\* 550 5\.7\.1 waits-mx\.test does not receive mail here/);
  expect(await stored(account.id)).toBe(1);
});

it("checks a domain just turned inbound at once in the worker's periodic check: its MX record found there, the MX takes its mail", async () => {
  await publish(ourMx('checked-mx.test'));
  const { account, id } = await inboundDomain('checked-mx.test');
  // the verify before it was turned inbound did not look for the MX: refused until the worker checks
  expect((await swaks(mx.port, 'hello@checked-mx.test')).out).toMatch(/<\*\* 550 5\.7\.1 checked-mx\.test does not receive mail here/);
  const due = await db().domain.findUniqueOrThrow({ where: { id } });
  expect(due.nextCheckAt.getTime()).toBeLessThanOrEqual(Date.now());

  expect(await recheckDueDomains(db(), resolver())).toBeGreaterThanOrEqual(1);
  const checked = await db().domain.findUniqueOrThrow({ where: { id } });
  expect(checked.inboundMxFoundAt).not.toBeNull();
  expect(checked.nextCheckAt.getTime()).toBeGreaterThan(Date.now() + 3600_000);
  await takenWithin(mx.port, 'hello@checked-mx.test');
  expect(await stored(account.id)).toBe(1);
});

it('takes an inbound domain\'s mail without its MX record when MX_REQUIRE_MX_RECORD is off (off by default outside production)', async () => {
  const { account } = await inboundDomain('dev-mx.test');
  expect((await swaks(mx.port, 'hello@dev-mx.test')).out).toMatch(/<\*\* 550 5\.7\.1/);
  const sent = await swaks(devMx.port, 'hello@dev-mx.test');
  expect(sent.out).toMatch(/<- {2}250 2\.0\.0 OK: [0-9a-f-]{36}/);
  expect(await stored(account.id)).toBe(1);

  const saved = process.env.MX_REQUIRE_MX_RECORD;
  try {
    delete process.env.MX_REQUIRE_MX_RECORD;
    expect(mxConfig('production').requireMxRecord).toBe(true);
    expect(mxConfig('development').requireMxRecord).toBe(false);
    process.env.MX_REQUIRE_MX_RECORD = 'false';
    expect(mxConfig('production').requireMxRecord).toBe(false);
    process.env.MX_REQUIRE_MX_RECORD = 'maybe';
    expect(() => mxConfig('production')).toThrow('MX_REQUIRE_MX_RECORD must be true or false');
  } finally {
    if (saved === undefined) delete process.env.MX_REQUIRE_MX_RECORD;
    else process.env.MX_REQUIRE_MX_RECORD = saved;
  }
});
