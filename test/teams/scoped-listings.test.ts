import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';
import { consoleClient, linkToken, ORIGIN, sessionCookie } from './support';

/**
 * A person who is not an operator, listing without `?account=` (docs/teams.md), sees only the accounts they belong
 * to; the admin token sees every account; naming another's account is refused. One check per listing kind.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const PASSWORD = 'correct horse battery staple';

async function member(role: string, account: number) {
  const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email: `m-${randomUUID()}@example.com`, name: 'M', role, account });
  const accepted = await consoleClient(ctx.api).post(`/admin/invite/${linkToken(res.body.invite_url)}`, { password: PASSWORD });
  return `ms_console=${sessionCookie(accepted).value}`;
}

/** One of each kind in the tenant's account; answers the id each listing shows it by. */
async function populate(tenant: Tenant) {
  const admin = asAdmin(ctx.api);
  const account = tenant.account.id;
  const domain = (await admin.post('/admin/api/domains').send({ account, name: `d${account}.test` }).expect(201)).body.domain;
  await db().domain.update({ where: { id: domain.id }, data: { status: 'verified', inbound: true } });
  const route = (await admin.post('/admin/api/routes').send({ account, domain: domain.id, match: '*', action: 'hold' }).expect(201)).body.route;
  const tracking = (await admin.post('/admin/api/tracking-domains').send({ account, name: `links.d${account}.test` }).expect(201)).body.tracking_domain;
  const webhook = (await admin.post('/admin/api/webhooks').send({ account, url: 'https://hooks.example.com/in' }).expect(201)).body.webhook;
  const list = await makeList(account, tenant.mailbox.id);
  const template = (await admin.post('/admin/api/templates').send({ account, name: `t${account}`, subject: 'Hi', text: 'Hi' }).expect(201)).body.template;
  const campaign = await makeCampaign(account, tenant.mailbox.id);
  const subscriber = await db().subscriber.create({ data: { listId: list.id, email: `s${account}@example.com`, status: 'active' } });
  const broadcast = (await admin.post('/admin/api/broadcasts').send({ list: list.key, subject: 'News', text: 'Hi' }).expect(201)).body.broadcast;
  await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to: 'x@example.com', subject: 's', text: 't' }).expect(202);
  const message = await db().message.findFirstOrThrow({ where: { accountId: account } });
  const raw = Buffer.from('From: a@b.test\r\nSubject: held\r\n\r\nhi\r\n');
  const held = await db().mxMessage.create({ data: { id: randomUUID(), accountId: account, domain: domain.name, status: 'held', mailFrom: 'a@b.test', rcptTo: [`x@${domain.name}`], clientAddress: '127.0.0.1', helo: 'b.test', auth: {}, raw, size: raw.length } });
  return { accounts: account, templates: template.id, lists: list.id, list_key: list.key, campaigns: campaign.id, subscribers: subscriber.id, keys: tenant.keyId, mailboxes: tenant.mailbox.id, domains: domain.id, routes: route.id, tracking_domains: tracking.id, webhooks: webhook.id, broadcasts: broadcast.id, messages: message.id, held: held.id } as Record<string, number | string>;
}

/** listing path -> the key of its rows in the answer, and which populated id shows the account's row */
const LISTINGS: [string, string, string][] = [
  ['/admin/api/accounts', 'accounts', 'accounts'],
  ['/admin/api/templates', 'templates', 'templates'],
  ['/admin/api/messages/search', 'messages', 'messages'],
  ['/admin/api/keys', 'keys', 'keys'],
  ['/admin/api/mailboxes', 'mailboxes', 'mailboxes'],
  ['/admin/api/domains', 'domains', 'domains'],
  ['/admin/api/routes', 'routes', 'routes'],
  ['/admin/api/tracking-domains', 'tracking_domains', 'tracking_domains'],
  ['/admin/api/webhooks', 'webhooks', 'webhooks'],
  ['/admin/api/broadcasts', 'broadcasts', 'broadcasts'],
  ['/admin/api/messages', 'messages', 'messages'],
  ['/admin/api/inbound?status=held', 'messages', 'held'],
];

let mine: Record<string, number | string>;
let theirs: Record<string, number | string>;
let cookie: string;
let other: Tenant;
let mineAccount: number;

beforeAll(async () => {
  const [a, b] = [await makeTenant(), await makeTenant()];
  other = b;
  mineAccount = a.account.id;
  [mine, theirs] = [await populate(a), await populate(b)];
  cookie = await member('viewer', a.account.id);
});

it.each(LISTINGS)('%s names no account: a member sees their own account only, the admin token every one', async (path, key, kind) => {
  const ids = (body: Record<string, { id: number | string }[]>) => body[key]!.map((row) => row.id);
  const asMember = await request(ctx.api.app).get(path).set('Cookie', cookie);
  expect(asMember.status).toBe(200);
  expect(ids(asMember.body)).toContain(mine[kind]);
  expect(ids(asMember.body)).not.toContain(theirs[kind]);

  const asToken = await asAdmin(ctx.api).get(path);
  expect(ids(asToken.body)).toEqual(expect.arrayContaining([mine[kind], theirs[kind]]));

  const named = await request(ctx.api.app).get(`${path}${path.includes('?') ? '&' : '?'}account=${other.account.id}`).set('Cookie', cookie);
  expect(named.status).toBe(403);
});

/** Reads, exports and stats of one row by id: `{kind}` is the id of the populated row of that kind. */
const BY_ID: string[] = [
  '/admin/api/templates/{templates}',
  '/admin/api/templates/{templates}/versions',
  '/admin/api/lists/{lists}',
  '/admin/api/lists/{lists}/subscribers',
  '/admin/api/lists/{lists}/subscribers.csv',
  '/admin/api/subscribers/{subscribers}/consent',
  '/admin/api/subscribers/{subscribers}/consent/export',
  '/admin/api/campaigns/{campaigns}',
  '/admin/api/campaigns/{campaigns}/stats',
  '/admin/api/campaigns/{campaigns}/prospects',
  '/admin/api/broadcasts/{broadcasts}',
  '/admin/api/broadcasts/{broadcasts}/links',
  '/admin/api/domains/{domains}',
  '/admin/api/routes/{routes}',
  '/admin/api/tracking-domains/{tracking_domains}',
  '/admin/api/webhooks/{webhooks}/deliveries',
  '/admin/api/messages/{messages}',
  '/admin/api/stats?campaign={campaigns}',
  '/admin/api/stats?mailbox={mailboxes}',
];

it.each(BY_ID)("GET %s of another account's row: 403 naming the account; the member's own row answers", async (path) => {
  const fill = (rows: Record<string, number | string>) => path.replace(/\{(\w+)\}/g, (_, name: string) => String(rows[name]));
  const refused = await request(ctx.api.app).get(fill(theirs)).set('Cookie', cookie);
  expect(refused.status).toBe(403);
  expect(refused.body).toEqual({ ok: false, error: `needs read in account ${other.account.id}` });
  const own = await request(ctx.api.app).get(fill(mine)).set('Cookie', cookie);
  expect(own.status).toBe(200);
});

it("answers 403 to a person's preview of another account's template and dry run of its list, and to the whole service's stats", async () => {
  const sender = await member('sender', mineAccount);
  const preview = (id: number | string) => request(ctx.api.app).post(`/admin/api/templates/${id}/preview`).set('Cookie', sender).set('Origin', ORIGIN).send({});
  expect((await preview(theirs.templates!)).status).toBe(403);
  expect((await preview(mine.templates!)).status).toBe(200);
  const audience = (key: number | string) => request(ctx.api.app).post('/admin/api/broadcasts/audience').set('Cookie', sender).set('Origin', ORIGIN).send({ list: key });
  const refused = await audience(theirs.list_key!);
  expect(refused.status).toBe(403);
  expect(refused.body.error).toBe(`needs broadcasts.manage in account ${other.account.id}`);
  expect((await audience(mine.list_key!)).status).toBe(200);

  const whole = await request(ctx.api.app).get('/admin/api/stats').set('Cookie', cookie);
  expect(whole.status).toBe(403);
  expect(whole.body.error).toMatch(/^needs instance\.manage/);
  expect((await request(ctx.api.app).get(`/admin/api/stats?account=${mineAccount}`).set('Cookie', cookie)).status).toBe(200);
  expect((await asAdmin(ctx.api).get('/admin/api/stats')).status).toBe(200);
  // the whole service's delivery counts likewise
  expect((await request(ctx.api.app).get('/admin/api/delivery/status').set('Cookie', cookie)).body).toEqual({ ok: false, error: 'needs instance.manage' });
  expect((await asAdmin(ctx.api).get('/admin/api/delivery/status')).status).toBe(200);
});
