import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { consoleClient, linkToken, ORIGIN, sessionCookie } from './support';

/**
 * A change by id names no account: the person's permission is held to the account of the row it changes
 * (docs/teams.md). An owner of one account changing another account's rows is refused with 403, and nothing changes
 * (no row, no audit entry); the same call by an owner of the row's account goes through.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const PASSWORD = 'correct horse battery staple';

async function owner(account: number): Promise<string> {
  const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email: `o-${randomUUID()}@example.com`, name: 'O', role: 'owner', account });
  const accepted = await consoleClient(ctx.api).post(`/admin/invite/${linkToken(res.body.invite_url)}`, { password: PASSWORD });
  return `ms_console=${sessionCookie(accepted).value}`;
}

interface Rows {
  tenant: Tenant;
  list: number;
  webhook: number;
  suppression: number;
  broadcast: number;
}

async function rowsOf(tenant: Tenant): Promise<Rows> {
  const admin = asAdmin(ctx.api);
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { name: 'kept name' });
  const webhook = (await admin.post('/admin/api/webhooks').send({ account: tenant.account.id, url: 'https://hooks.example.com/kept' }).expect(201)).body.webhook.id;
  const suppression = (await db().suppression.create({ data: { accountId: tenant.account.id, email: 'kept@example.com', reason: 'bounced' } })).id;
  const broadcast = (await admin.post('/admin/api/broadcasts').send({ list: list.key, subject: 'Kept', text: 'Hi' }).expect(201)).body.broadcast.id;
  return { tenant, list: list.id, webhook, suppression, broadcast };
}

/** Each change by id, and how to read what it would change. */
const CHANGES: [string, (r: Rows) => { method: 'patch' | 'delete'; path: string; body?: object }, (r: Rows) => Promise<unknown>][] = [
  ['PATCH /mailboxes/{id}', (r) => ({ method: 'patch', path: `/mailboxes/${r.tenant.mailbox.id}`, body: { name: 'Taken' } }), (r) => db().mailbox.findUnique({ where: { id: r.tenant.mailbox.id }, select: { name: true } })],
  ['PATCH /lists/{id}', (r) => ({ method: 'patch', path: `/lists/${r.list}`, body: { name: 'taken' } }), (r) => db().list.findUnique({ where: { id: r.list }, select: { name: true } })],
  ['PATCH /webhooks/{id}', (r) => ({ method: 'patch', path: `/webhooks/${r.webhook}`, body: { url: 'https://attacker.example.com/in' } }), (r) => db().webhook.findUnique({ where: { id: r.webhook }, select: { url: true } })],
  ['PATCH /broadcasts/{id}', (r) => ({ method: 'patch', path: `/broadcasts/${r.broadcast}`, body: { subject: 'Taken' } }), (r) => db().broadcast.findUnique({ where: { id: r.broadcast }, select: { subject: true } })],
  ['DELETE /suppressions/{id}', (r) => ({ method: 'delete', path: `/suppressions/${r.suppression}` }), (r) => db().suppression.findUnique({ where: { id: r.suppression }, select: { id: true } })],
  ['DELETE /keys/{id}', (r) => ({ method: 'delete', path: `/keys/${r.tenant.keyId}` }), (r) => db().apiKey.findUnique({ where: { id: r.tenant.keyId }, select: { revokedAt: true } })],
];

let target: Rows;
let stranger: string;
let rightful: string;

beforeAll(async () => {
  const [a, b] = [await makeTenant(), await makeTenant()];
  target = await rowsOf(a);
  stranger = await owner(b.account.id);
  rightful = await owner(a.account.id);
});

it.each(CHANGES)("%s on another account's row: 403, nothing changed, no entry; its own owner's goes through", async (_op, call, read) => {
  const { method, path, body } = call(target);
  const before = await read(target);
  const requestId = `by-id-${randomUUID()}`;
  const send = (cookie: string, id: string) => {
    const req = request(ctx.api.app)[method](`/admin/api${path}`).set('Cookie', cookie).set('Origin', ORIGIN).set('X-Request-Id', id);
    return body ? req.send(body) : req;
  };
  const refused = await send(stranger, requestId);
  expect(refused.status).toBe(403);
  expect(refused.body).toEqual({ ok: false, error: expect.stringMatching(/^needs \S+ in account \d+$/) });
  expect(await read(target)).toEqual(before);
  expect(await db().auditEntry.count({ where: { requestId } })).toBe(0);

  const allowed = await send(rightful, `by-id-${randomUUID()}`);
  expect(allowed.status).toBeLessThan(300);
  expect(await read(target)).not.toEqual(before);
});
