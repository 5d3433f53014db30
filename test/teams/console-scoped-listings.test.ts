import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeCampaign, makeList, makeTenant } from '../helpers/factories';
import { consoleClient, linkToken } from './support';

/**
 * The console's listing pages show a person the rows of their own accounts only, as the admin API's listings do
 * (docs/teams.md): a viewer of account A never sees a row of account B, nor B in an account picker. The admin token
 * (and an operator) still sees every account. One marker per kind of row, in B's names.
 */
jest.setTimeout(180_000);

const ctx = useApi();
const PASSWORD = 'correct horse battery staple';

/** Rows of a new account, each named with `marker`. */
async function accountWithRows(marker: string) {
  const tenant = await makeTenant();
  const account = tenant.account.id;
  await db().account.update({ where: { id: account }, data: { name: `account ${marker}` } });
  const admin = asAdmin(ctx.api);
  const list = await makeList(account, tenant.mailbox.id, { name: `list ${marker}` });
  const campaign = await makeCampaign(account, tenant.mailbox.id);
  await db().campaign.update({ where: { id: campaign.id }, data: { name: `campaign ${marker}` } });
  await db().mailbox.update({ where: { id: tenant.mailbox.id }, data: { name: `mailbox ${marker}` } });
  const template = (await admin.post('/admin/api/templates').send({ account, name: `template ${marker}`, subject: 'Kept', text: 'Kept' }).expect(201)).body.template.id as number;
  await admin.post('/admin/api/webhooks').send({ account, url: `https://hooks.example.com/${marker}` }).expect(201);
  const domain = (await admin.post('/admin/api/domains').send({ account, name: `${marker}.test` }).expect(201)).body.domain.id as number;
  await admin.post('/admin/api/broadcasts').send({ list: list.key, subject: `broadcast ${marker}`, text: 'Hi' }).expect(201);
  await db().suppression.create({ data: { accountId: account, email: `${marker}@example.com`, reason: 'bounced' } });
  await db().apiKey.updateMany({ where: { accountId: account }, data: { name: `key ${marker}` } });
  await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to: `to-${marker}@example.com`, subject: `message ${marker}`, text: 't' }).expect(202);
  const message = (await db().message.findFirstOrThrow({ where: { accountId: account } })).id;
  const subscriber = (await db().subscriber.create({ data: { listId: list.id, email: `sub-${marker}@example.com`, status: 'active' } })).id;
  // an email read from the mailbox: its id a bigint of its time (docs/partitions.md), far above 2^31
  const inbound = (await db().inboundMessage.create({ data: { mailboxId: tenant.mailbox.id, uidValidity: 1n, uid: 1n, kind: 'reply', subject: `inbound ${marker}` } })).id;
  return { tenant, account, pages: [`/admin/lists/${list.id}`, `/admin/lists/${list.id}/subscribers.csv`, `/admin/campaigns/${campaign.id}`, `/admin/templates/${template}`, `/admin/domains/${domain}`, `/admin/mailboxes/${tenant.mailbox.id}`, `/admin/messages/${message}`, `/admin/subscribers/${subscriber}`, `/admin/subscribers/${subscriber}/consent.json`, `/admin/inbound/${inbound}`] };
}

/** Two accounts with rows, and a viewer of the first signed in to the console. */
async function twoAccountsAndAViewerOfTheFirst() {
  const mine = `mine${randomUUID().slice(0, 8)}`;
  const theirs = `theirs${randomUUID().slice(0, 8)}`;
  const a = await accountWithRows(mine);
  const b = await accountWithRows(theirs);
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email: `p-${randomUUID()}@example.com`, name: 'P', role: 'viewer', account: a.account }).expect(201);
  const person = consoleClient(ctx.api);
  expect((await person.post(`/admin/invite/${linkToken(invited.body.invite_url)}`, { password: PASSWORD })).status).toBe(303);
  return { mine, theirs, a, b, person };
}

const PAGES = ['/admin/accounts', '/admin/lists', '/admin/campaigns', '/admin/mailboxes', '/admin/templates', '/admin/webhooks', '/admin/domains', '/admin/broadcasts', '/admin/suppressions', '/admin/keys', '/admin/mx', '/admin/inbound', '/admin/tracking-domains'];

it("a person's listing pages hold their own accounts' rows, and no other account's", async () => {
  const mine = `mine${randomUUID().slice(0, 8)}`;
  const theirs = `theirs${randomUUID().slice(0, 8)}`;
  const a = await accountWithRows(mine);
  await accountWithRows(theirs);
  await makeAccount(`account ${theirs}-empty`);

  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email: `p-${randomUUID()}@example.com`, name: 'P', role: 'viewer', account: a.account }).expect(201);
  const person = consoleClient(ctx.api);
  expect((await person.post(`/admin/invite/${linkToken(invited.body.invite_url)}`, { password: PASSWORD })).status).toBe(303);

  const shown: string[] = [];
  for (const page of PAGES) {
    const res = await person.agent.get(page);
    if (res.status === 403) continue;
    expect([page, res.status]).toEqual([page, 200]);
    expect([page, res.text.includes(theirs)]).toEqual([page, false]);
    if (res.text.includes(mine)) shown.push(page);
  }
  // the pages still show the person's own rows
  expect(shown).toEqual(expect.arrayContaining(['/admin/accounts', '/admin/lists', '/admin/campaigns', '/admin/templates', '/admin/webhooks', '/admin/domains', '/admin/broadcasts', '/admin/suppressions']));
  // and the CSV of suppressions holds theirs only
  const csv = await person.agent.get('/admin/suppressions.csv');
  if (csv.status === 200) {
    expect(csv.text).toContain(`${mine}@example.com`);
    expect(csv.text).not.toContain(theirs);
  }

  // the admin token's console still shows every account
  const admin = consoleClient(ctx.api);
  expect((await admin.post('/admin/signin', { token: 'test-admin-token-0123456789' })).status).toBe(303);
  expect((await admin.agent.get('/admin/lists')).text).toContain(`list ${theirs}`);
});

it("a person's pages by id and the message search hold their own accounts' rows: another account's row is refused", async () => {
  const { mine, theirs, a, b, person } = await twoAccountsAndAViewerOfTheFirst();

  for (const [index, page] of b.pages.entries()) {
    const refused = await person.agent.get(page);
    expect([page, refused.status]).toEqual([page, 403]);
    expect(refused.text).toContain(`needs read in account ${b.account}`);
    expect(refused.text).not.toContain(theirs);
    const own = await person.agent.get(a.pages[index]!);
    expect([a.pages[index], own.status]).toEqual([a.pages[index], 200]);
  }
  const search = await person.agent.get('/admin/messages');
  expect(search.status).toBe(200);
  expect(search.text).toContain(`message ${mine}`);
  expect(search.text).not.toContain(theirs);
  expect((await person.agent.get(`/admin/messages?q=to-${theirs}@example.com`)).text).not.toContain(`message ${theirs}`);
});

it("a person's overview shows their own account's charts, not the whole service's queues, counts and partitions", async () => {
  const { mine, theirs, a, b, person } = await twoAccountsAndAViewerOfTheFirst();

  const page = await person.agent.get('/admin/?range=24h');
  expect(page.status).toBe(200);
  expect(page.text).toContain(`account ${mine}`);
  expect(page.text).not.toContain(theirs);
  expect(page.text).not.toContain('id="partitions"');
  expect(page.text).not.toContain('<h2>Queues</h2>');
  // the range form keeps the account
  expect(page.text).toContain(`<input type="hidden" name="account" value="${a.account}">`);
  expect(page.text).toContain(`Emails accepted and delivered, account ${mine}`);
  expect((await person.agent.get(`/admin/?account=${b.account}`)).status).toBe(403);

  // the admin token's overview is the whole service's
  const admin = consoleClient(ctx.api);
  expect((await admin.post('/admin/signin', { token: 'test-admin-token-0123456789' })).status).toBe(303);
  const whole = await admin.agent.get('/admin/');
  expect(whole.text).toContain('id="partitions"');
  expect(whole.text).toContain('<h2>Queues</h2>');
});
