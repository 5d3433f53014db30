import { useApi, asAdmin } from '../helpers/api';
import { useDns, type ZoneRecord } from '../helpers/dns-server';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { published } from '../domains/support';
import type { DomainRecord } from '../../apps/core/src/domains/records';

/** An inbound domain's MX record (docs/mx.md, "DNS"): listed once the domain is inbound, and checked in DNS like the rest. */
jest.setTimeout(60_000);

// read by the API (the records) and by the CLI the test runs (it inherits the environment)
process.env.MX_HOSTNAME = 'mx.service.test';

const dns = useDns(['test']);
const app = useApi();
const admin = () => asAdmin(app.api);

const inboundRecord = (records: DomainRecord[]) => records.find((r) => r.purpose === 'inbound');

it("lists an inbound domain's MX (host and preference) and says whether DNS points it at this MX: missing, another host, another host first, then found", async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'news@inbound-rec.test' });
  const added = await admin().post('/admin/api/domains').send({ account: account.id, name: 'inbound-rec.test' });
  expect(added.status).toBe(201);
  const id = added.body.domain.id as number;
  // a sending domain has no MX record to publish
  expect(inboundRecord(added.body.domain.records)).toBeUndefined();
  const sending: ZoneRecord[] = published(added.body.domain.records);
  await dns.publish(sending);
  expect((await admin().post(`/admin/api/domains/${id}/verify`)).body.domain.status).toBe('verified');

  const turned = await admin().patch(`/admin/api/domains/${id}`).send({ inbound: true });
  expect(turned.status).toBe(200);
  expect(inboundRecord(turned.body.domain.records)).toMatchObject({ type: 'MX', host: 'inbound-rec.test', name: '@', value: '10 mx.service.test', required: false, status: 'missing', seen: [] });

  // no MX record at all
  const none = await admin().post(`/admin/api/domains/${id}/verify`);
  expect(inboundRecord(none.body.domain.records)).toMatchObject({ status: 'missing', seen: [], problem: 'no MX record at inbound-rec.test' });
  // the MX record is advice: the domain stays verified, and the other records found
  expect(none.body.domain).toMatchObject({ status: 'verified', reason: null });

  // the MX names another host: wrong, with what DNS answered
  await dns.publish([...sending, { type: 'MX', host: 'inbound-rec.test', target: 'mx.elsewhere.test', priority: 10 }]);
  const other = await admin().post(`/admin/api/domains/${id}/verify`);
  expect(inboundRecord(other.body.domain.records)).toMatchObject({ status: 'wrong', seen: ['10 mx.elsewhere.test'], problem: 'the MX should name mx.service.test' });

  // ours is there, but another host has a lower preference number and takes the mail first
  await dns.publish([...sending, { type: 'MX', host: 'inbound-rec.test', target: 'mx.elsewhere.test', priority: 5 }, { type: 'MX', host: 'inbound-rec.test', target: 'mx.service.test', priority: 10 }]);
  const second = await admin().post(`/admin/api/domains/${id}/verify`);
  const secondRecord = inboundRecord(second.body.domain.records)!;
  expect(secondRecord.status).toBe('wrong');
  expect([...secondRecord.seen].sort()).toEqual(['10 mx.service.test', '5 mx.elsewhere.test']);
  expect(secondRecord.problem).toContain('mx.elsewhere.test (preference 5) comes before mx.service.test');

  // pointed at this MX (a backup at a higher number is fine): found, through the CLI as through the API
  await dns.publish([...sending, { type: 'MX', host: 'inbound-rec.test', target: 'mx.service.test', priority: 10 }, { type: 'MX', host: 'inbound-rec.test', target: 'backup.elsewhere.test', priority: 20 }]);
  const cli = await runAdmin('domain', 'verify', String(id));
  expect(cli.err).toBe('');
  expect(cli.code).toBe(0);
  expect(inboundRecord(cli.out.domain.records)).toMatchObject({ status: 'found', problem: null });
  const shown = await admin().get(`/admin/api/domains/${id}`);
  expect(inboundRecord(shown.body.domain.records)).toMatchObject({ status: 'found', value: '10 mx.service.test' });

  // no longer inbound: the record is not asked for any more
  const back = await admin().patch(`/admin/api/domains/${id}`).send({ inbound: false });
  expect(inboundRecord(back.body.domain.records)).toBeUndefined();
});

it('refuses to turn a domain that is not verified inbound, and changes nothing', async () => {
  const account = await makeAccount();
  const added = await admin().post('/admin/api/domains').send({ account: account.id, name: 'pending-rec.test' });
  const refused = await admin().patch(`/admin/api/domains/${added.body.domain.id}`).send({ inbound: true });
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ ok: false });
  const shown = await admin().get(`/admin/api/domains/${added.body.domain.id}`);
  expect(shown.body.domain.inbound).toBe(false);
  expect(inboundRecord(shown.body.domain.records)).toBeUndefined();
});
