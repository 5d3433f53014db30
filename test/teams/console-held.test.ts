import { randomUUID } from 'node:crypto';
import type { ApiApp } from '../../apps/api/src/app';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';
import { consoleClient, linkToken } from './support';

/**
 * A console form naming a row by id is held to the row's account, as the admin API's changes are (docs/teams.md): an
 * owner of account A posting a form about a row of account B is refused (403, a page naming the permission), and
 * nothing changes: not the row, and no audit entry. One case per form kind.
 */
jest.setTimeout(180_000);

const ctx = useApi();
useDns(['test']);
const PASSWORD = 'correct horse battery staple';

/** A person with `role` in `account`, signed in to the console in a client of their own. */
async function person(api: ApiApp, account: number, role: string) {
  const invited = await asAdmin(api).post('/admin/api/users').send({ email: `p-${randomUUID()}@example.com`, name: 'P', role, account }).expect(201);
  const client = consoleClient(api);
  expect((await client.post(`/admin/invite/${linkToken(invited.body.invite_url)}`, { password: PASSWORD })).status).toBe(303);
  return { client, csrf: await client.csrf('/admin'), id: invited.body.user.id as number };
}

type Ids = Record<string, number | string>;

/** Account B's rows, one of each kind a form names. */
async function rowsOf(b: Tenant): Promise<Ids> {
  const admin = asAdmin(ctx.api);
  const account = b.account.id;
  const made = async (path: string, body: object) => Object.values((await admin.post(`/admin/api${path}`).send(body).expect(201)).body as Record<string, { id: number }>).find((v) => v && typeof v === 'object')!.id;
  const list = await makeList(account, b.mailbox.id, { name: 'kept' });
  const domain = await made('/domains', { account, name: `b-${randomUUID().slice(0, 8)}.test` });
  const domainName = (await db().domain.findUniqueOrThrow({ where: { id: domain } })).name;
  await db().domain.update({ where: { id: domain }, data: { status: 'verified', inbound: true } });
  const send = (to: string) => admin.post('/api/v1/send').set('Authorization', `Bearer ${b.token}`).send({ from: b.mailbox.address, to, subject: 'kept', text: 'x' }).expect(202);
  await send('queued@example.com');
  await send('failed@example.com');
  const message = (to: string) => db().message.findFirstOrThrow({ where: { accountId: account, to } });
  const failed = (await message('failed@example.com')).id;
  await db().message.update({ where: { id: failed }, data: { status: 'failed' } });
  const raw = Buffer.from(`From: a@sender.test\r\nTo: in@${domainName}\r\nSubject: held\r\n\r\nhello\r\n`);
  const held = await db().mxMessage.create({
    data: { id: randomUUID(), accountId: account, domain: domainName, status: 'held', mailFrom: 'a@sender.test', rcptTo: [`in@${domainName}`], clientAddress: '127.0.0.1', helo: 'sender.test', fromAddress: 'a@sender.test', subject: 'held', auth: {}, raw, size: raw.length },
  });
  return {
    list: list.id,
    campaign: (await makeCampaign(account, b.mailbox.id)).id,
    domain,
    webhook: await made('/webhooks', { account, url: 'https://hooks.example.com/kept' }),
    template: await made('/templates', { account, name: 'kept', subject: 'Kept', text: 'Kept' }),
    broadcast: await made('/broadcasts', { list: list.key, subject: 'Kept', text: 'Hi' }),
    suppression: (await db().suppression.create({ data: { accountId: account, email: 'kept@example.com', reason: 'bounced' } })).id,
    route: await made('/routes', { account, domain, match: 'in', action: 'hold' }),
    tracking: await made('/tracking-domains', { account, name: `links.${domainName}` }),
    queued: (await message('queued@example.com')).id,
    failed,
    held: held.id,
    user: (await person(ctx.api, account, 'viewer')).id,
  };
}

/** Everything a form could change, as one value to compare before and after (rows, and the audit log's length). */
async function snapshot(b: Tenant, ids: Ids): Promise<string> {
  const account = b.account.id;
  const rows = await Promise.all([
    db().mailbox.findUnique({ where: { id: b.mailbox.id } }),
    db().apiKey.findUnique({ where: { id: b.keyId } }),
    db().list.findUnique({ where: { id: Number(ids.list) } }),
    db().subscriber.count({ where: { listId: Number(ids.list) } }),
    db().campaign.findUnique({ where: { id: Number(ids.campaign) } }),
    db().domain.findUnique({ where: { id: Number(ids.domain) } }),
    db().webhook.findUnique({ where: { id: Number(ids.webhook) } }),
    db().template.findUnique({ where: { id: Number(ids.template) } }),
    db().broadcast.findUnique({ where: { id: Number(ids.broadcast) } }),
    db().suppression.findUnique({ where: { id: Number(ids.suppression) } }),
    db().inboundRoute.findUnique({ where: { id: Number(ids.route) } }),
    db().trackingDomain.findUnique({ where: { id: Number(ids.tracking) } }),
    db().message.findMany({ where: { accountId: account }, select: { id: true, status: true }, orderBy: { id: 'asc' } }),
    db().mxMessage.findUnique({ where: { id: String(ids.held) }, select: { status: true } }),
    db().membership.findMany({ where: { userId: Number(ids.user) } }),
    db().userSession.count({ where: { userId: Number(ids.user) } }),
    db().auditEntry.count(),
  ]);
  return JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? v.length : v));
}

/** Each form kind naming a row by id: its path, its fields, and the permission its refusal names. */
const FORMS: [string, (b: Tenant, ids: Ids) => { path: string; form?: Record<string, string>; file?: string }, string][] = [
  ['mailbox pacing', (b) => ({ path: '/mailboxes/pacing', form: { mailbox: String(b.mailbox.id), gap_jitter: '0.3' } }), 'mailboxes.manage'],
  ['mailbox SMTP test', (b) => ({ path: `/mailboxes/${b.mailbox.id}/test` }), 'mailboxes.manage'],
  ['mailbox IMAP test', (b) => ({ path: `/mailboxes/${b.mailbox.id}/test-imap` }), 'mailboxes.manage'],
  ['mailbox reconnect', (b) => ({ path: `/mailboxes/${b.mailbox.id}/reconnect` }), 'mailboxes.manage'],
  ['key revoke', (b) => ({ path: `/keys/${b.keyId}/revoke` }), 'keys.manage'],
  ['list import (pasted)', (_b, ids) => ({ path: `/lists/${ids.list}/import`, form: { csv: 'taken@example.com' } }), 'lists.manage'],
  ['list import (file)', (_b, ids) => ({ path: `/lists/${ids.list}/upload`, file: 'email\ntaken@example.com\n' }), 'lists.manage'],
  ['list series', (_b, ids) => ({ path: `/lists/${ids.list}/series`, form: { steps: '[]' } }), 'lists.manage'],
  ['campaign status', (_b, ids) => ({ path: `/campaigns/${ids.campaign}/status`, form: { status: 'paused' } }), 'campaigns.manage'],
  ['campaign mailboxes', (b, ids) => ({ path: `/campaigns/${ids.campaign}/mailboxes`, form: { 'box0.use': 'yes', 'box0.mailbox': String(b.mailbox.id) } }), 'campaigns.manage'],
  ['campaign steps', (_b, ids) => ({ path: `/campaigns/${ids.campaign}/steps`, form: { 'step0.subject': 'Taken', 'step0.body': 'Over', 'step0.delay_hours': '0' } }), 'campaigns.manage'],
  ['campaign sending', (_b, ids) => ({ path: `/campaigns/${ids.campaign}/sending`, form: { unsubscribe: 'on' } }), 'campaigns.manage'],
  ['domain check', (_b, ids) => ({ path: `/domains/${ids.domain}/verify` }), 'domains.manage'],
  ['domain rotate', (_b, ids) => ({ path: `/domains/${ids.domain}/rotate` }), 'domains.manage'],
  ['domain delete', (_b, ids) => ({ path: `/domains/${ids.domain}/delete` }), 'domains.manage'],
  ['tracking domain check', (_b, ids) => ({ path: `/tracking-domains/${ids.tracking}/verify` }), 'domains.manage'],
  ['tracking domain delete', (_b, ids) => ({ path: `/tracking-domains/${ids.tracking}/delete` }), 'domains.manage'],
  ['webhook enable', (_b, ids) => ({ path: `/webhooks/${ids.webhook}/enabled`, form: { enabled: 'no' } }), 'webhooks.manage'],
  ['webhook rotate', (_b, ids) => ({ path: `/webhooks/${ids.webhook}/rotate` }), 'webhooks.manage'],
  ['webhook delete', (_b, ids) => ({ path: `/webhooks/${ids.webhook}/delete` }), 'webhooks.manage'],
  ['template save', (_b, ids) => ({ path: `/templates/${ids.template}`, form: { subject: 'Taken', text: 'Taken' } }), 'templates.manage'],
  ['template preview', (_b, ids) => ({ path: `/templates/${ids.template}/preview`, form: { subject: 'Peek', text: 'Peek' } }), 'templates.manage'],
  ['template restore', (_b, ids) => ({ path: `/templates/${ids.template}/restore`, form: { version: '1' } }), 'templates.manage'],
  ['template delete', (_b, ids) => ({ path: `/templates/${ids.template}/delete` }), 'templates.manage'],
  ['broadcast status', (_b, ids) => ({ path: `/broadcasts/${ids.broadcast}/status`, form: { status: 'cancelled' } }), 'broadcasts.manage'],
  ['suppression delete', (_b, ids) => ({ path: `/suppressions/${ids.suppression}/delete`, form: { reason: 'taken' } }), 'lists.manage'],
  ['message retry', (_b, ids) => ({ path: `/messages/${ids.failed}/retry` }), 'send'],
  ['message cancel', (_b, ids) => ({ path: `/messages/${ids.queued}/cancel` }), 'send'],
  ['inbound route save', (_b, ids) => ({ path: `/mx/routes/${ids.route}`, form: { action: 'reject' } }), 'instance.manage'],
  ['inbound route delete', (_b, ids) => ({ path: `/mx/routes/${ids.route}/delete` }), 'instance.manage'],
  ['held MX message release', (_b, ids) => ({ path: `/mx/messages/${ids.held}/release` }), 'instance.manage'],
  ['user role', (b, ids) => ({ path: `/users/${ids.user}/role`, form: { role: 'owner', account: String(b.account.id) } }), 'users.manage'],
  ['user sign out', (_b, ids) => ({ path: `/users/${ids.user}/signout` }), 'users.manage'],
  ['user remove', (_b, ids) => ({ path: `/users/${ids.user}/remove` }), 'users.manage'],
];

let b: Tenant;
let ids: Ids;
let stranger: Awaited<ReturnType<typeof person>>;
let rightful: Awaited<ReturnType<typeof person>>;

beforeAll(async () => {
  const a = await makeTenant();
  b = await makeTenant();
  ids = await rowsOf(b);
  stranger = await person(ctx.api, a.account.id, 'owner');
  rightful = await person(ctx.api, b.account.id, 'owner');
});

const post = (who: typeof stranger, path: string, form?: Record<string, string>, file?: string) => {
  const req = who.client.agent.post(`/admin${path}`);
  return file !== undefined ? req.field('_csrf', who.csrf).attach('file', Buffer.from(file), 'taken.csv') : req.type('form').send({ _csrf: who.csrf, ...form });
};

it.each(FORMS)("%s, on another account's row: 403 naming the permission, nothing changed", async (_kind, call, permission) => {
  const { path, form, file } = call(b, ids);
  const before = await snapshot(b, ids);
  const refused = await post(stranger, path, form, file);
  expect(refused.status).toBe(403);
  // held to the row's account ("in account B"); the forms of an operator's page (inbound routes) are refused before it
  expect(refused.text).toMatch(new RegExp(`needs ${permission.replace('.', '\\.')}( in account ${b.account.id})?\\b`));
  expect(await snapshot(b, ids)).toBe(before);
});

it("the same forms by an owner of the row's account go through", async () => {
  expect((await post(rightful, `/webhooks/${ids.webhook}/enabled`, { enabled: 'no' })).status).toBe(303);
  expect((await db().webhook.findUniqueOrThrow({ where: { id: Number(ids.webhook) } })).enabled).toBe(false);
  expect((await post(rightful, `/lists/${ids.list}/series`, { steps: '[]' })).status).toBe(303);
  const entry = await db().auditEntry.findFirstOrThrow({ where: { resource: 'list', resourceId: String(ids.list) }, orderBy: { id: 'desc' } });
  expect(entry).toMatchObject({ via: 'console', actorKind: 'user', actorId: expect.any(Number), accountId: b.account.id });
});
