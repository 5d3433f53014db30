import { randomUUID } from 'node:crypto';
import { ADMIN_OPERATIONS } from '../../apps/api/src/openapi/admin-document';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * Every change the admin API takes writes an audit entry (docs/teams.md): each mutating operation of the admin OpenAPI
 * document is called here with a body it accepts, and must leave an entry carrying the request's id. An operation
 * added to the document without a call here fails the first test; one whose route writes no entry fails the second.
 */
jest.setTimeout(120_000);

const ctx = useApi();
useDns(['test']);

/** POSTs that change nothing (a dry run, a render, a login tried): no entry expected, none written. */
const READS = new Set(['POST /broadcasts/audience', 'POST /templates/{id}/preview', 'POST /mailboxes/{id}/test']);

interface Fixture {
  tenant: Tenant;
  ids: Record<string, number | string>;
}
type Call = (f: Fixture) => { path: string; body?: unknown; type?: string; send?: string };

const RAW = Buffer.from('From: a@sender.test\r\nTo: in@in.test\r\nSubject: held\r\nMessage-ID: <h1@sender.test>\r\n\r\nhello\r\n');
const mxMessage = (account: number, status: 'held' | 'delivered') =>
  db().mxMessage.create({
    data: { id: randomUUID(), accountId: account, domain: 'in.test', status, mailFrom: 'a@sender.test', rcptTo: ['in@in.test'], clientAddress: '127.0.0.1', helo: 'sender.test', fromAddress: 'a@sender.test', subject: 'held', auth: {}, raw: RAW, size: RAW.length },
  });

/** The calls, in an order where each finds what it needs (a later call may use what an earlier one made). */
const CALLS: [string, Call][] = [
  ['POST /accounts', () => ({ path: '/accounts', body: { name: `audited ${randomUUID()}` } })],
  ['POST /mailboxes', (f) => ({ path: '/mailboxes', body: { account: f.tenant.account.id, address: 'second@example.com', smtp: 'smtp://u:p@127.0.0.1:2525' } })],
  ['PATCH /mailboxes/{id}', (f) => ({ path: `/mailboxes/${f.tenant.mailbox.id}`, body: { name: 'Renamed' } })],
  ['POST /keys', (f) => ({ path: '/keys', body: { account: f.tenant.account.id, name: 'audited', mailbox: f.tenant.mailbox.id, daily_limit: 5 } })],
  ['POST /users', (f) => ({ path: '/users', body: { email: `u-${randomUUID()}@example.com`, name: 'U', role: 'viewer', account: f.tenant.account.id } })],
  ['PATCH /users/{id}', (f) => ({ path: `/users/${f.ids.user}`, body: { role: 'sender', account: f.tenant.account.id } })],
  ['POST /users/{id}/signout', (f) => ({ path: `/users/${f.ids.user}/signout` })],
  ['POST /users/second-factor', (f) => ({ path: '/users/second-factor', body: { account: f.tenant.account.id, required: false } })],
  ['DELETE /users/{id}/second-factor', (f) => ({ path: `/users/${f.ids.user}/second-factor` })],
  ['DELETE /users/{id}', (f) => ({ path: `/users/${f.ids.user}` })],
  ['POST /lists', (f) => ({ path: '/lists', body: { account: f.tenant.account.id, name: 'audited', confirm: false, mailbox: f.tenant.mailbox.id } })],
  ['PATCH /lists/{id}', (f) => ({ path: `/lists/${f.ids.list}`, body: { name: 'audited, renamed' } })],
  ['POST /lists/{id}/import', (f) => ({ path: `/lists/${f.ids.list}/import`, type: 'text/csv', send: 'email,name\nimported@example.com,I\n' })],
  ['POST /campaigns', (f) => ({ path: '/campaigns', body: { account: f.tenant.account.id, name: 'audited', goal: 'plain', mailbox: f.tenant.mailbox.id, steps: [{ subject: 'Hi', body: 'Hello', delay_hours: 0 }] } })],
  ['PATCH /campaigns/{id}', (f) => ({ path: `/campaigns/${f.ids.campaign}`, body: { name: 'audited, renamed' } })],
  ['POST /messages/{id}/retry', (f) => ({ path: `/messages/${f.ids.failed}/retry` })],
  ['POST /messages/{id}/cancel', (f) => ({ path: `/messages/${f.ids.queued}/cancel` })],
  ['DELETE /suppressions/{id}', (f) => ({ path: `/suppressions/${f.ids.suppression}` })],
  ['DELETE /stop-list/{id}', (f) => ({ path: `/stop-list/${f.ids.stop}` })],
  ['POST /webhooks', (f) => ({ path: '/webhooks', body: { account: f.tenant.account.id, url: 'https://hooks.example.com/in' } })],
  ['PATCH /webhooks/{id}', (f) => ({ path: `/webhooks/${f.ids.webhook}`, body: { url: 'https://hooks.example.com/other' } })],
  ['POST /webhooks/{id}/rotate', (f) => ({ path: `/webhooks/${f.ids.webhook}/rotate` })],
  ['POST /broadcasts', (f) => ({ path: '/broadcasts', body: { list: f.ids.listKey, subject: 'News', text: 'Hello' } })],
  ['PATCH /broadcasts/{id}', (f) => ({ path: `/broadcasts/${f.ids.broadcast}`, body: { subject: 'News, again' } })],
  ['POST /templates', (f) => ({ path: '/templates', body: { account: f.tenant.account.id, name: 'audited', subject: 'Hi {{ name }}', text: 'Hello {{ name }}' } })],
  ['PATCH /templates/{id}', (f) => ({ path: `/templates/${f.ids.template}`, body: { subject: 'Hello {{ name }}' } })],
  ['POST /templates/{id}/restore', (f) => ({ path: `/templates/${f.ids.template}/restore`, body: { version: 1 } })],
  ['POST /templates/{id}/test', (f) => ({ path: `/templates/${f.ids.template}/test`, body: { to: 'tester@example.com', variables: { name: 'T' } } })],
  ['POST /domains', (f) => ({ path: '/domains', body: { account: f.tenant.account.id, name: 'in.test' } })],
  ['POST /domains/{id}/verify', (f) => ({ path: `/domains/${f.ids.domain}/verify` })],
  ['POST /domains/{id}/rotate', (f) => ({ path: `/domains/${f.ids.domain}/rotate` })],
  ['PATCH /domains/{id}', (f) => ({ path: `/domains/${f.ids.domain}`, body: { inbound: true } })],
  ['POST /routes', (f) => ({ path: '/routes', body: { account: f.tenant.account.id, domain: f.ids.domain, match: 'in', action: 'hold' } })],
  ['PATCH /routes/{id}', (f) => ({ path: `/routes/${f.ids.route}`, body: { action: 'reject' } })],
  ['DELETE /routes/{id}', (f) => ({ path: `/routes/${f.ids.route}` })],
  ['POST /inbound/{id}/release', (f) => ({ path: `/inbound/${f.ids.held}/release` })],
  ['POST /inbound/{id}/drop', (f) => ({ path: `/inbound/${f.ids.held2}/drop` })],
  ['POST /inbound/{id}/replay', (f) => ({ path: `/inbound/${f.ids.held}/replay` })],
  ['POST /tracking-domains', (f) => ({ path: '/tracking-domains', body: { account: f.tenant.account.id, name: 'links.in.test' } })],
  ['POST /tracking-domains/{id}/verify', (f) => ({ path: `/tracking-domains/${f.ids.tracking}/verify` })],
  ['DELETE /tracking-domains/{id}', (f) => ({ path: `/tracking-domains/${f.ids.tracking}` })],
  ['DELETE /webhooks/{id}', (f) => ({ path: `/webhooks/${f.ids.webhook}` })],
  ['DELETE /domains/{id}', (f) => ({ path: `/domains/${f.ids.domain}` })],
  ['DELETE /templates/{id}', (f) => ({ path: `/templates/${f.ids.template}` })],
  ['DELETE /keys/{id}', (f) => ({ path: `/keys/${f.tenant.keyId}` })],
];

/** What a call's answer gives the later calls. */
function remember(op: string, body: Record<string, { id?: number | string; key?: string } | undefined>, ids: Fixture['ids']) {
  const made: Record<string, string> = { 'POST /users': 'user', 'POST /lists': 'list', 'POST /campaigns': 'campaign', 'POST /webhooks': 'webhook', 'POST /broadcasts': 'broadcast', 'POST /templates': 'template', 'POST /domains': 'domain', 'POST /routes': 'route', 'POST /tracking-domains': 'tracking' };
  const name = made[op];
  if (!name) return;
  const row = Object.values(body).find((v) => v && typeof v === 'object' && 'id' in v);
  ids[name] = row!.id!;
  if (name === 'list') ids.listKey = row!.key!;
}

const mutating = ADMIN_OPERATIONS.filter((op) => op.method !== 'get').map((op) => `${op.method.toUpperCase()} ${op.path}`);

it('has a call for every mutating operation of the admin API', () => {
  const called = new Set(CALLS.map(([op]) => op));
  expect(mutating.filter((op) => !called.has(op) && !READS.has(op))).toEqual([]);
  expect([...called].filter((op) => !mutating.includes(op))).toEqual([]);
});

it('writes an entry with the request id for every change, and none for a read', async () => {
  const tenant = await makeTenant();
  const admin = asAdmin(ctx.api);
  const queued = await admin.post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to: 'someone@example.com', subject: 'one', text: 'x' });
  const failed = await admin.post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to: 'other@example.com', subject: 'two', text: 'x' });
  expect([queued.status, failed.status]).toEqual([202, 202]);
  const messageTo = (to: string) => db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to } });
  const [one, two] = [await messageTo('someone@example.com'), await messageTo('other@example.com')];
  await db().message.update({ where: { id: two.id }, data: { status: 'failed' } });
  const list = await makeList(tenant.account.id, tenant.mailbox.id);
  await db().subscriber.create({ data: { listId: list.id, email: 'reader@example.com', status: 'active' } });
  const suppression = await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@example.com', reason: 'bounced' } });
  const stop = await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'stop.example.com', kind: 'domain' } });
  const held = await mxMessage(tenant.account.id, 'held');
  const held2 = await mxMessage(tenant.account.id, 'held');
  const f: Fixture = { tenant, ids: { queued: one.id, failed: two.id, suppression: suppression.id, stop: stop.id, held: held.id, held2: held2.id } };

  const missing: string[] = [];
  for (const [op, call] of CALLS) {
    if (op === 'PATCH /domains/{id}') await db().domain.update({ where: { id: Number(f.ids.domain) }, data: { status: 'verified' } });
    if (op === 'DELETE /templates/{id}') await db().broadcast.deleteMany({ where: { templateId: Number(f.ids.template) } });
    const { path, body, type, send } = call(f);
    const requestId = `audit-${randomUUID()}`;
    const method = op.split(' ')[0]!.toLowerCase() as 'post';
    let req = admin[method](`/admin/api${path}`).set('X-Request-Id', requestId);
    if (type) req = req.set('Content-Type', type);
    const res = await (send !== undefined ? req.send(send) : body !== undefined ? req.send(body as object) : req);
    if (res.status >= 300) throw new Error(`${op}: ${res.status} ${JSON.stringify(res.body)}`);
    remember(op, res.body, f.ids);
    const entries = await db().auditEntry.findMany({ where: { requestId } });
    if (entries.length !== 1) missing.push(`${op}: ${entries.length} entries`);
    else expect(entries[0]).toMatchObject({ actorKind: 'admin-token', via: 'admin-api' });
  }
  expect(missing).toEqual([]);

  // a read writes nothing
  const before = await db().auditEntry.count();
  expect((await admin.post('/admin/api/broadcasts/audience').send({ list: list.key })).status).toBe(200);
  expect(await db().auditEntry.count()).toBe(before);
});

it('names the account, the before and the after of a change by id', async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { name: 'old name' });
  const res = await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).set('X-Request-Id', 'audit-list-rename').send({ name: 'new name' });
  expect(res.status).toBe(200);
  const [entry] = await db().auditEntry.findMany({ where: { requestId: 'audit-list-rename' } });
  expect(entry).toMatchObject({ action: 'update', resource: 'list', resourceId: String(list.id), accountId: tenant.account.id, before: expect.objectContaining({ name: 'old name' }), after: expect.objectContaining({ name: 'new name' }) });

  // a refused change (a missing row) writes nothing and changes nothing
  const count = await db().auditEntry.count();
  expect((await asAdmin(ctx.api).delete('/admin/api/webhooks/2000000')).status).toBe(404);
  expect(await db().auditEntry.count()).toBe(count);
});
