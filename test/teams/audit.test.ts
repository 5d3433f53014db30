import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox, makeTenant } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { consoleClient, linkToken, ORIGIN, sessionCookie } from './support';

/**
 * The audit log (docs/teams.md): changes through the admin API, the console and the CLI write an entry in their own
 * transaction (actor, before and after with secrets redacted, IP, request id); entries are never updated or deleted;
 * keyset pages and NDJSON.
 */
jest.setTimeout(60_000);

const ctx = useApi();
const PASSWORD = 'correct horse battery staple';

async function person(email: string, role: string, account: number) {
  const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: 'P', role, account });
  const browser = consoleClient(ctx.api);
  const accepted = await browser.post(`/admin/invite/${linkToken(res.body.invite_url)}`, { password: PASSWORD });
  return { id: res.body.user.id as number, browser, cookie: `ms_console=${sessionCookie(accepted).value}` };
}

const entries = (where: { resource?: string; resourceId?: string } = {}) => db().auditEntry.findMany({ where, orderBy: { id: 'asc' } });

it('writes who created a key through the admin API, with its IP and request id, and never the token', async () => {
  const tenant = await makeTenant();
  const res = await asAdmin(ctx.api).post('/admin/api/keys').set('X-Request-Id', 'req-audit-key-1').send({ account: tenant.account.id, name: 'ci', mailbox: tenant.mailbox.id, daily_limit: 5 });
  expect(res.status).toBe(201);
  const [entry] = await entries({ resource: 'key', resourceId: String(res.body.key.id) });
  expect(entry).toMatchObject({ actorKind: 'admin-token', actorLabel: 'admin token', via: 'admin-api', action: 'create', resource: 'key', accountId: tenant.account.id, requestId: 'req-audit-key-1' });
  expect(entry!.ip).toMatch(/127\.0\.0\.1/);
  expect(entry!.before).toBeNull();
  expect(entry!.after).toMatchObject({ id: res.body.key.id, name: 'ci', hint: res.body.key.hint });
  expect(JSON.stringify({ ...entry, id: String(entry!.id) })).not.toContain(res.body.key.token);
});

it("redacts a mailbox's SMTP password", async () => {
  const account = await makeAccount();
  const res = await asAdmin(ctx.api).post('/admin/api/mailboxes').send({ account: account.id, address: 'ops@example.com', smtp: 'smtp://ops:hunter2-very-secret@127.0.0.1:2525' });
  expect(res.status).toBe(201);
  const [entry] = await entries({ resource: 'mailbox', resourceId: String(res.body.mailbox.id) });
  expect(entry!.after).toMatchObject({ address: 'ops@example.com' });
  expect(JSON.stringify({ ...entry, id: String(entry!.id) })).not.toContain('hunter2');
});

it("writes a person's revocation with the key before and after, and nothing for a refused change", async () => {
  const tenant = await makeTenant();
  const owner = await person('audit-owner@example.com', 'owner', tenant.account.id);
  const before = await db().auditEntry.count();
  const refused = await request(ctx.api.app).post('/admin/api/keys').set('Cookie', owner.cookie).set('Origin', ORIGIN).send({ account: tenant.account.id, name: 'x', mailbox: 2_000_000, daily_limit: 1 });
  expect(refused.status).toBeGreaterThanOrEqual(400);
  expect(await db().auditEntry.count()).toBe(before);

  const revoked = await request(ctx.api.app).delete(`/admin/api/keys/${tenant.keyId}`).set('Cookie', owner.cookie).set('Origin', ORIGIN);
  expect(revoked.status).toBe(200);
  const [entry] = await entries({ resource: 'key', resourceId: String(tenant.keyId) });
  expect(entry).toMatchObject({ actorKind: 'user', actorId: owner.id, actorLabel: 'audit-owner@example.com', action: 'revoke', accountId: tenant.account.id });
  expect((entry!.before as { revoked_at: unknown }).revoked_at).toBeNull();
  expect((entry!.after as { revoked_at: unknown }).revoked_at).toEqual(expect.any(String));
});

it('writes the console\'s and the CLI\'s changes too', async () => {
  const tenant = await makeTenant();
  const owner = await person('audit-console@example.com', 'owner', tenant.account.id);
  const created = await owner.browser.post('/admin/keys', { account: String(tenant.account.id), name: 'from the console', mailbox: String(tenant.mailbox.id), daily_limit: '3' }, '/admin/keys');
  expect(created.status).toBe(201);
  const key = await db().apiKey.findFirstOrThrow({ where: { name: 'from the console' } });
  const [entry] = await entries({ resource: 'key', resourceId: String(key.id) });
  expect(entry).toMatchObject({ via: 'console', actorLabel: 'audit-console@example.com', action: 'create' });

  const cli = await runAdmin('account', 'create', '--name', 'made by the cli');
  expect(cli.code).toBe(0);
  const [account] = await entries({ resource: 'account', resourceId: String(cli.out.account.id) });
  expect(account).toMatchObject({ via: 'cli', actorKind: 'admin-token', action: 'create', accountId: cli.out.account.id });
});

it('refuses to update or delete an entry', async () => {
  await makeAccount();
  const [first] = await entries();
  await expect(db().$executeRawUnsafe(`UPDATE audit_log SET action = 'nothing' WHERE id = ${first!.id}`)).rejects.toThrow(/append-only/);
  await expect(db().$executeRawUnsafe(`DELETE FROM audit_log WHERE id = ${first!.id}`)).rejects.toThrow(/append-only/);
  expect((await db().auditEntry.findUniqueOrThrow({ where: { id: first!.id } })).action).toBe(first!.action);
});

it('answers keyset pages and the NDJSON export, and only the accounts a person may read', async () => {
  const admin = asAdmin(ctx.api);
  for (const name of ['p1', 'p2', 'p3']) await admin.post('/admin/api/accounts').send({ name }).expect(201);
  const all = (await admin.get('/admin/api/audit?resource=account&action=create&after=0&limit=1000')).body.entries as { id: number }[];
  const first = await admin.get('/admin/api/audit?resource=account&after=0&limit=2');
  expect(first.body.ok).toBe(true);
  expect(first.body.entries.map((e: { id: number }) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
  expect(first.body.next).toBe(all[1]!.id);
  const second = await admin.get(`/admin/api/audit?resource=account&after=${first.body.next}&limit=1000`);
  expect(second.body.entries.map((e: { id: number }) => e.id)).toEqual(all.slice(2).map((e) => e.id));
  expect(second.body.next).toBeNull();
  const newest = await admin.get('/admin/api/audit?resource=account&limit=1');
  expect(newest.body.entries[0].id).toBe(all[all.length - 1]!.id);

  const ndjson = await admin.get('/admin/api/audit.ndjson?resource=account');
  expect(ndjson.headers['content-type']).toMatch(/application\/x-ndjson/);
  const lines = ndjson.text.trim().split('\n').map((l) => JSON.parse(l) as { id: number; actor: { label: string } });
  expect(lines.map((l) => l.id)).toEqual(all.map((e) => e.id));
  expect(lines[0]!.actor.label).toBeDefined();

  expect((await admin.get('/admin/api/audit?after=1&before=5')).status).toBe(400);

  const tenant = await makeTenant();
  await makeMailbox(tenant.account.id);
  const viewer = await person('audit-viewer@example.com', 'viewer', tenant.account.id);
  const owner = await person('audit-reader@example.com', 'owner', tenant.account.id);
  expect((await request(ctx.api.app).get(`/admin/api/audit?account=${tenant.account.id}`).set('Cookie', viewer.cookie)).body).toEqual({ ok: false, error: 'needs audit.read' });
  // naming no account: the entries of the accounts where the person may read the log, no other's
  const mine = await request(ctx.api.app).get('/admin/api/audit?limit=1000').set('Cookie', owner.cookie);
  expect(mine.status).toBe(200);
  expect(mine.body.entries.length).toBeGreaterThan(0);
  expect(mine.body.entries.every((e: { account: number }) => e.account === tenant.account.id)).toBe(true);
  const own = await request(ctx.api.app).get(`/admin/api/audit?account=${tenant.account.id}`).set('Cookie', owner.cookie);
  expect(own.status).toBe(200);
  expect(own.body.entries.length).toBeGreaterThan(0);
  expect(own.body.entries.every((e: { account: number }) => e.account === tenant.account.id)).toBe(true);

  // the console's page, filtered
  const page = await owner.browser.agent.get('/admin/audit?resource=user');
  expect(page.status).toBe(200);
  expect(page.text).toContain('audit-viewer@example.com');
  expect((await viewer.browser.agent.get('/admin/audit')).status).toBe(403);
});
