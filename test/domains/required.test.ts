import { db } from '../../apps/core/src/db';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import { verifyDomain } from '../../apps/core/src/domains';
import { asAdmin, as, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeAccount, makeCampaign, makeKey, makeList, makeMailbox } from '../helpers/factories';
import { published } from './support';

// REQUIRE_VERIFIED_DOMAIN as production has it by default; read once, when the file's configuration is first loaded
process.env.REQUIRE_VERIFIED_DOMAIN = 'true';
const dns = useDns(['test']);
const app = useApi();

it('refuses a send from an unverified domain with 403 naming the domain and what is missing; nothing is stored', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'hi@unproven.test' });
  const { token } = await makeKey(account.id, mailbox.id);
  const none = await as(app.api, token).post('/api/v1/send').send({ to: 'a@inbox.test', subject: 'Hi', text: 'Hi' });
  expect(none.status).toBe(403);
  expect(none.body).toEqual({ ok: false, error: expect.stringMatching(/^from: the domain unproven\.test is not a verified sending domain of this account: add it/) });
  expect(await db().send.count({ where: { accountId: account.id } })).toBe(0);
});

it('names what is missing for a domain added but not verified, and a broadcast or campaign from it does not start', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'hi@pending.test' });
  const { token } = await makeKey(account.id, mailbox.id);
  const added = await asAdmin(app.api).post('/admin/api/domains').send({ account: account.id, name: 'pending.test' });
  await asAdmin(app.api).post(`/admin/api/domains/${added.body.domain.id}/verify`);
  const res = await as(app.api, token).post('/api/v1/send').send({ to: 'a@inbox.test', subject: 'Hi', text: 'Hi' });
  expect(res.status).toBe(403);
  expect(res.body.error).toMatch(/^from: the domain pending\.test is not verified \(pending\): DKIM \(RSA\) missing at ms\w+r\._domainkey\.pending\.test.*SPF missing at pending\.test/);

  const list = await makeList(account.id, mailbox.id, { confirm: false });
  const broadcast = await asAdmin(app.api).post('/admin/api/broadcasts').send({ list: list.key, subject: 'News', text: 'News' });
  const start = await asAdmin(app.api).patch(`/admin/api/broadcasts/${broadcast.body.broadcast.id}`).send({ status: 'sending' });
  expect(start.status).toBe(403);
  expect(start.body.error).toMatch(/^the mailbox hi@pending\.test cannot send: the domain pending\.test is not verified \(pending\)/);
  expect((await db().broadcast.findUniqueOrThrow({ where: { id: broadcast.body.broadcast.id } })).status).toBe('draft');

  const campaign = await makeCampaign(account.id, mailbox.id);
  const run = await asAdmin(app.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'running' });
  expect(run.status).toBe(403);
  expect(run.body.error).toMatch(/pending\.test is not verified/);
  expect((await db().campaign.findUniqueOrThrow({ where: { id: campaign.id } })).status).toBe('draft');
  const created = await asAdmin(app.api).post('/admin/api/campaigns').send({ account: account.id, name: 'Go', goal: 'plain', mailbox: mailbox.id, status: 'running', steps: [{ subject: 'S', body: 'B', delay_hours: 0 }] });
  expect(created.status).toBe(403);
});

it('accepts sends, broadcasts and campaigns once the domain is verified', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'hi@proven.test' });
  const { token } = await makeKey(account.id, mailbox.id);
  const added = await asAdmin(app.api).post('/admin/api/domains').send({ account: account.id, name: 'proven.test' });
  await dns.publish(published(added.body.domain.records));
  const domain = await verifyDomain(db(), added.body.domain.id, { dns: dnsLookup() });
  expect(domain.status).toBe('verified');
  const res = await as(app.api, token).post('/api/v1/send').send({ to: 'a@inbox.test', subject: 'Hi', text: 'Hi' });
  expect(res.status).toBe(202);
  const campaign = await makeCampaign(account.id, mailbox.id);
  expect((await asAdmin(app.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'running' })).status).toBe(200);
});
