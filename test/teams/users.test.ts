import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { consoleClient, linkToken, ORIGIN, sessionCookie } from './support';

/**
 * Users, roles and sessions (docs/teams.md) through the admin API and the console's forms: invitations emailed on the
 * wire, passwords, sessions in Postgres, and the one permission table answering 403 "needs <permission>".
 */
jest.setTimeout(60_000);

const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });
const PASSWORD = 'correct horse battery staple';

/** Invites a user through the admin API and accepts the invitation with `password`; answers the user and session cookie. */
async function member(email: string, role: string, account?: number) {
  const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: email.split('@')[0], role, ...(account ? { account } : {}) });
  expect(res.status).toBe(201);
  const browser = consoleClient(ctx.api);
  const token = linkToken(res.body.invite_url);
  const accepted = await browser.post(`/admin/invite/${token}`, { password: PASSWORD });
  expect(accepted.status).toBe(303);
  return { user: res.body.user as { id: number }, browser, cookie: `ms_console=${sessionCookie(accepted).value}` };
}

const adminApi = (cookie: string) => ({
  get: (path: string) => request(ctx.api.app).get(path).set('Cookie', cookie),
  post: (path: string) => request(ctx.api.app).post(path).set('Cookie', cookie).set('Origin', ORIGIN),
});

describe('invitations', () => {
  it('creates the user and emails the invitation link from the account mailbox', async () => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id, { smtp: sink.url });
    const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email: 'Ada@Example.com', name: 'Ada', role: 'owner', account: account.id });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email: 'ada@example.com', name: 'Ada', operator: false, roles: [{ account: account.id, role: 'owner' }], has_password: false });
    expect(res.body.invite_url).toMatch(/^http:\/\/mail\.test\/admin\/invite\/[A-Za-z0-9_-]{43}$/);
    await waitFor(() => sink.to('ada@example.com').length === 1, { what: 'the invitation on the wire' });
    const [mail] = sink.to('ada@example.com');
    expect(mail!.envelope.from).toBe(mailbox.address);
    expect(mail!.parsed.subject).toBe('You are invited to the mail service');
    expect(mail!.parsed.text).toContain(res.body.invite_url);
  });

  it('refuses short and common passwords, then sets a good one and signs in with a Lax HttpOnly cookie', async () => {
    const account = await makeAccount();
    const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email: 'bo@example.com', name: 'Bo', role: 'viewer', account: account.id });
    const path = `/admin/invite/${linkToken(res.body.invite_url)}`;
    const browser = consoleClient(ctx.api);
    expect((await browser.agent.get(path)).text).toContain('bo@example.com');
    const short = await browser.post(path, { password: 'short pass' });
    expect(short.status).toBe(400);
    expect(short.text).toContain('at least 12 characters');
    // a 12-character word from the common-password list
    const common = await browser.post(path, { password: 'unbelievable' });
    expect(common.status).toBe(400);
    expect(common.text).toContain('one of the most common passwords');
    expect((await db().user.findUniqueOrThrow({ where: { email: 'bo@example.com' } })).passwordHash).toBeNull();

    const accepted = await browser.post(path, { password: PASSWORD });
    expect(accepted.status).toBe(303);
    const cookie = sessionCookie(accepted);
    expect(cookie.value).toMatch(/^u_[A-Za-z0-9_-]{43}$/);
    expect(cookie.attributes).toMatch(/HttpOnly/);
    expect(cookie.attributes).toMatch(/SameSite=Lax/);
    expect((await browser.agent.get('/admin')).status).toBe(200);
    // the session's row holds only a digest of the cookie's token
    expect(await db().userSession.count({ where: { id: cookie.value } })).toBe(0);

    const late = consoleClient(ctx.api);
    expect((await late.agent.get(path)).text).toContain('this invitation was used already');
    const again = await late.post(path, { password: 'another fine passphrase' }, '/admin/signin');
    expect(again.status).toBe(400);
    expect(again.text).toContain('this invitation was used already');
  });

  it('refuses an expired invitation and changes nothing', async () => {
    const account = await makeAccount();
    const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email: 'cy@example.com', name: 'Cy', role: 'sender', account: account.id });
    await db().userToken.updateMany({ where: { userId: res.body.user.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const path = `/admin/invite/${linkToken(res.body.invite_url)}`;
    const browser = consoleClient(ctx.api);
    const page = await browser.agent.get(path);
    expect(page.status).toBe(400);
    expect(page.text).toContain('this invitation has expired: ask for a new one');
    const post = await browser.post(path, { password: PASSWORD }, '/admin/signin');
    expect(post.status).toBe(400);
    expect(String(post.headers['set-cookie'] ?? '')).not.toContain('ms_console=');
    expect((await db().user.findUniqueOrThrow({ where: { email: 'cy@example.com' } })).passwordHash).toBeNull();
    expect(await db().userSession.count({ where: { userId: res.body.user.id } })).toBe(0);
  });

  it('refuses bad users: unknown role, operator with an account, a role without one, a taken email', async () => {
    const account = await makeAccount();
    const admin = asAdmin(ctx.api);
    const before = await db().user.count();
    expect((await admin.post('/admin/api/users').send({ email: 'x@example.com', name: 'X', role: 'king', account: account.id })).body.error).toMatch(/role/);
    expect((await admin.post('/admin/api/users').send({ email: 'x@example.com', name: 'X', role: 'operator', account: account.id })).body.error).toBe('account: an operator has every account; leave account out');
    expect((await admin.post('/admin/api/users').send({ email: 'x@example.com', name: 'X', role: 'viewer' })).body.error).toBe('account: required for the role viewer');
    expect((await admin.post('/admin/api/users').send({ email: 'x@example.com', name: 'X', role: 'viewer', account: 2_000_000 })).status).toBe(404);
    expect(await db().user.count()).toBe(before);
    await admin.post('/admin/api/users').send({ email: 'x@example.com', name: 'X', role: 'viewer', account: account.id }).expect(201);
    const taken = await admin.post('/admin/api/users').send({ email: 'X@example.com', name: 'X', role: 'viewer', account: account.id });
    expect(taken.status).toBe(409);
  });
});

describe('sign-in', () => {
  it('signs in with email and password; a wrong one is refused and counted in the failure rule', async () => {
    const account = await makeAccount();
    await member('di@example.com', 'viewer', account.id);
    const browser = consoleClient(ctx.api);
    const wrong = await browser.signIn('di@example.com', 'not the password at all');
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong email or password.');
    const unknown = await browser.signIn('nobody@example.com', PASSWORD);
    expect(unknown.text).toContain('Wrong email or password.');
  });
});

describe('roles', () => {
  it('answers 403 naming the permission for what the role may not do, from the console and the admin API alike', async () => {
    const tenant = await makeTenant();
    const other = await makeTenant();
    const viewer = await member('viewer@example.com', 'viewer', tenant.account.id);
    const sender = await member('sender@example.com', 'sender', tenant.account.id);
    const owner = await member('owner@example.com', 'owner', tenant.account.id);

    expect((await adminApi(viewer.cookie).get('/admin/api/keys')).status).toBe(200);
    const list = { account: tenant.account.id, name: 'news', confirm: false, mailbox: tenant.mailbox.id };
    expect((await adminApi(viewer.cookie).post('/admin/api/lists').send(list)).body).toEqual({ ok: false, error: 'needs lists.manage' });
    expect((await adminApi(sender.cookie).post('/admin/api/lists').send(list)).status).toBe(201);
    const key = { account: tenant.account.id, name: 'k', mailbox: tenant.mailbox.id, daily_limit: 10 };
    expect((await adminApi(sender.cookie).post('/admin/api/keys').send(key)).body).toEqual({ ok: false, error: 'needs keys.manage' });
    expect((await adminApi(owner.cookie).post('/admin/api/keys').send(key)).status).toBe(201);
    // an owner of one account is nobody in another
    const elsewhere = { account: other.account.id, name: 'k', mailbox: other.mailbox.id, daily_limit: 10 };
    expect((await adminApi(owner.cookie).post('/admin/api/keys').send(elsewhere)).body).toEqual({ ok: false, error: 'needs keys.manage' });
    expect((await adminApi(owner.cookie).post('/admin/api/accounts').send({ name: 'mine' })).body).toEqual({ ok: false, error: 'needs instance.manage' });
    // an owner invites into their own account only, and never an operator
    expect((await adminApi(owner.cookie).post('/admin/api/users').send({ email: 'new@example.com', name: 'N', role: 'sender', account: tenant.account.id })).status).toBe(201);
    expect((await adminApi(owner.cookie).post('/admin/api/users').send({ email: 'op@example.com', name: 'O', role: 'operator' })).body).toEqual({ ok: false, error: 'needs instance.manage' });

    // the console: the viewer's keys page has no form to create or revoke, and its POST is refused the same way
    const keysPage = await viewer.browser.agent.get('/admin/keys');
    expect(keysPage.text).not.toContain('action="/admin/keys"');
    expect(keysPage.text).not.toContain('Create key');
    expect(keysPage.text).not.toContain('href="/admin/users"');
    const csrf = viewer.browser.csrfOf(keysPage.text);
    const refused = await viewer.browser.agent.post('/admin/keys').type('form').send({ _csrf: csrf, account: String(tenant.account.id), name: 'k', mailbox: String(tenant.mailbox.id), daily_limit: '5' });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('needs keys.manage');
    const ownerKeys = await owner.browser.agent.get('/admin/keys');
    expect(ownerKeys.text).toContain('Create key');
    expect(await db().apiKey.count({ where: { accountId: tenant.account.id } })).toBe(2);
  });

  it('refuses a session calling the admin API from another origin, and keeps the admin token working', async () => {
    const account = await makeAccount();
    const owner = await member('o2@example.com', 'owner', account.id);
    const cross = await request(ctx.api.app).post('/admin/api/accounts').set('Cookie', owner.cookie).set('Origin', 'https://evil.example').send({ name: 'x' });
    expect(cross.status).toBe(403);
    expect(cross.body.error).toMatch(/Origin/);
    const none = await request(ctx.api.app).post('/admin/api/lists').set('Cookie', owner.cookie).send({});
    expect(none.status).toBe(403);
    expect((await request(ctx.api.app).get('/admin/api/accounts').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
  });

  it('a demoted user loses the permission at the next request, a removed one their session', async () => {
    const tenant = await makeTenant();
    const person = await member('de@example.com', 'admin', tenant.account.id);
    const list = () => adminApi(person.cookie).post('/admin/api/lists').send({ account: tenant.account.id, name: `l${Math.random()}`, confirm: false, mailbox: tenant.mailbox.id });
    expect((await list()).status).toBe(201);
    await asAdmin(ctx.api).patch(`/admin/api/users/${person.user.id}`).send({ role: 'viewer', account: tenant.account.id }).expect(200);
    expect((await list()).body).toEqual({ ok: false, error: 'needs lists.manage' });
    expect((await person.browser.agent.get('/admin/lists')).status).toBe(200);
    await asAdmin(ctx.api).delete(`/admin/api/users/${person.user.id}`).expect(200);
    expect((await adminApi(person.cookie).get('/admin/api/keys')).status).toBe(401);
    const page = await person.browser.agent.get('/admin/lists');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/admin/signin');
  });
});

describe('sessions', () => {
  it('signs out everywhere, and ends a session idle for 12 hours', async () => {
    const account = await makeAccount();
    const first = await member('ev@example.com', 'viewer', account.id);
    const second = consoleClient(ctx.api);
    expect((await second.signIn('ev@example.com', PASSWORD)).status).toBe(303);
    expect((await second.agent.get('/admin')).status).toBe(200);
    expect((await first.browser.post('/admin/signout-everywhere', {}, '/admin')).status).toBe(303);
    expect((await first.browser.agent.get('/admin')).status).toBe(303);
    expect((await second.agent.get('/admin')).status).toBe(303);

    const third = consoleClient(ctx.api);
    await third.signIn('ev@example.com', PASSWORD);
    expect((await third.agent.get('/admin')).status).toBe(200);
    await db().userSession.updateMany({ where: { userId: first.user.id }, data: { lastSeenAt: new Date(Date.now() - 12 * 3600 * 1000 - 1000) } });
    expect((await third.agent.get('/admin')).status).toBe(303);
    expect(await db().userSession.count({ where: { userId: first.user.id } })).toBe(0);
  });
});

describe('password reset', () => {
  it('emails a reset link, sets the new password and ends the other sessions', async () => {
    const account = await makeAccount();
    await makeMailbox(account.id, { smtp: sink.url });
    const person = await member('re@example.com', 'viewer', account.id);
    const stranger = consoleClient(ctx.api);
    const asked = await stranger.post('/admin/reset', { email: 're@example.com' });
    expect(asked.text).toContain('If that address has an account');
    const nobody = await stranger.post('/admin/reset', { email: 'nobody@example.com' });
    // the same answer for an address that has no account
    expect(nobody.status).toBe(asked.status);
    expect(nobody.text).toContain('If that address has an account');
    await waitFor(() => sink.to('re@example.com').some((m) => m.parsed.subject === 'Reset your password'), { what: 'the reset email on the wire' });
    const mail = sink.to('re@example.com').find((m) => m.parsed.subject === 'Reset your password')!;
    const url = /http:\/\/mail\.test\/admin\/reset\/[A-Za-z0-9_-]{43}/.exec(mail.parsed.text!)![0];
    const path = `/admin/reset/${linkToken(url)}`;
    const done = await stranger.post(path, { password: 'a new and long passphrase' });
    expect(done.status).toBe(303);
    // written to the audit log by the person whose password it is, through the console; the password never in it
    const entry = await db().auditEntry.findFirstOrThrow({ where: { action: 'reset-password', actorLabel: 're@example.com' } });
    expect(entry).toMatchObject({ via: 'console', actorKind: 'user', resource: 'user', after: expect.objectContaining({ password: '[redacted]' }) });
    expect((await person.browser.agent.get('/admin')).status).toBe(303);
    expect((await stranger.agent.get('/admin')).status).toBe(200);
    expect((await consoleClient(ctx.api).signIn('re@example.com', PASSWORD)).status).toBe(401);
    expect((await consoleClient(ctx.api).signIn('re@example.com', 'a new and long passphrase')).status).toBe(303);
  });
});

describe('lockout', () => {
  // last in the file: the address stays locked out for a minute
  it('locks out an address past its allowance of failed sign-ins, the right password included', async () => {
    const browser = consoleClient(ctx.api);
    for (let i = 0; i < 20; i++) await browser.signIn('di@example.com', 'not the password at all');
    const locked = await browser.signIn('di@example.com', PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toBeDefined();
  });
});
