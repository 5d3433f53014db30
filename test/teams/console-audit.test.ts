import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { consoleRouter } from '../../apps/api/src/console';
import { BodyBudget } from '../../apps/api/src/middleware/body-budget';
import { AuthFailures } from '../../apps/api/src/middleware/failures';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { consoleClient, linkToken } from './support';

/**
 * Every change a console form makes writes an audit entry (docs/teams.md): each POST route of the console's router is
 * posted here with a form it accepts, and must leave one entry, via "console", carrying the request's id. A route
 * added to the console without a call here (or a reason it changes nothing) fails the first test; one whose handler
 * writes no entry fails the second.
 */
jest.setTimeout(180_000);

const ctx = useApi();
useDns(['test']);

/** POSTs that change nothing the log records, each with why. */
const NOT_CHANGES: Record<string, string> = {
  '/signin': 'starts a session',
  '/signout': 'ends the own session',
  '/signin/second-factor': 'completes a sign-in',
  '/signin/second-factor/passkey': 'completes a sign-in',
  '/reset': 'asks for a reset link by email; the reset itself (/reset/:token) is audited',
  '/broadcasts/audience': 'a dry run: counts an audience',
  '/broadcasts/compose': 'shows the compose form again with its preview',
  '/templates/:id/preview': 'renders a draft',
  '/mailboxes/:id/test': 'tries a login; nothing is stored',
  '/mailboxes/:id/test-imap': 'tries a login; nothing is stored',
};

/** A person's own factors: audited, each entry checked where the factor is driven (TOTP by oathtool, passkeys in Chromium). */
const CHECKED_ELSEWHERE: Record<string, string> = {
  '/security/totp': 'test/teams/second-factor.test.ts (start-totp: the pending secret, redacted)',
  '/security/totp/confirm': 'test/teams/second-factor.test.ts (enable-totp)',
  '/signout-everywhere': "test/teams/console-audit.test.ts (sign-out-everywhere: a person's sessions ended, below)",
  '/security/totp/disable': 'test/teams/second-factor.test.ts (disable-totp)',
  '/security/passkeys': 'test/teams/passkeys.test.ts (add-passkey)',
  '/security/passkeys/:id/remove': 'test/teams/passkeys.test.ts (remove-passkey)',
  '/reset/:token': 'test/teams/users.test.ts (a reset link comes by email only)',
  '/mailboxes/connect': "test/oauth/console-connect.test.ts (the mailbox is made at the provider's callback, and its entry written then)",
  '/mailboxes/:id/reconnect': "test/oauth/console-connect.test.ts (the mailbox is changed at the provider's callback)",
};

interface Fixture {
  tenant: Tenant;
  ids: Record<string, number | string>;
}
/** A form: its fields; `file` posts it as multipart with that file (the list upload). */
type Call = (f: Fixture) => { path: string; form?: Record<string, string>; file?: string };

const RAW = Buffer.from('From: a@sender.test\r\nTo: in@in.test\r\nSubject: held\r\nMessage-ID: <c1@sender.test>\r\n\r\nhello\r\n');
const mxMessage = (account: number) =>
  db().mxMessage.create({
    data: { id: randomUUID(), accountId: account, domain: 'in.test', status: 'held', mailFrom: 'a@sender.test', rcptTo: ['in@in.test'], clientAddress: '127.0.0.1', helo: 'sender.test', fromAddress: 'a@sender.test', subject: 'held', auth: {}, raw: RAW, size: RAW.length },
  });

/** The calls, in an order where each finds what it needs (a later call may use what an earlier one made). */
const CALLS: [string, Call][] = [
  ['/accounts', () => ({ path: '/accounts', form: { name: `audited ${randomUUID()}` } })],
  ['/users', (f) => ({ path: '/users', form: { email: `c-${randomUUID()}@example.com`, name: 'C', role: 'viewer', account: String(f.tenant.account.id) } })],
  ['/invite/:token', (f) => ({ path: `/invite/${f.ids.invite}`, form: { password: 'a long and quiet evening' } })],
  ['/users/:id/role', (f) => ({ path: `/users/${f.ids.user}/role`, form: { role: 'sender', account: String(f.tenant.account.id) } })],
  ['/users/:id/signout', (f) => ({ path: `/users/${f.ids.user}/signout` })],
  ['/users/second-factor', (f) => ({ path: '/users/second-factor', form: { account: String(f.tenant.account.id), required: 'no' } })],
  ['/users/:id/remove', (f) => ({ path: `/users/${f.ids.user}/remove` })],
  ['/mailboxes', (f) => ({ path: '/mailboxes', form: { account: String(f.tenant.account.id), address: 'second@example.com', name: 'Second', smtp: 'smtp://u:p@127.0.0.1:2525' } })],
  ['/mailboxes/pacing', (f) => ({ path: '/mailboxes/pacing', form: { mailbox: String(f.tenant.mailbox.id), gap_jitter: '0.2' } })],
  ['/keys', (f) => ({ path: '/keys', form: { account: String(f.tenant.account.id), name: 'audited', mailbox: String(f.tenant.mailbox.id), daily_limit: '5' } })],
  ['/lists', (f) => ({ path: '/lists', form: { account: String(f.tenant.account.id), name: 'audited', mailbox: String(f.tenant.mailbox.id), confirm: 'no' } })],
  ['/lists/:id/import', (f) => ({ path: `/lists/${f.ids.list}/import`, form: { csv: 'pasted@example.com,P' } })],
  ['/lists/:id/upload', (f) => ({ path: `/lists/${f.ids.list}/upload`, file: 'email,name\nuploaded@example.com,U\n' })],
  ['/lists/:id/series', (f) => ({ path: `/lists/${f.ids.list}/series`, form: { steps: '[]' } })],
  ['/suppressions', (f) => ({ path: '/suppressions', form: { account: String(f.tenant.account.id), email: 'by-hand@example.com', detail: 'asked' } })],
  ['/suppressions/:id/delete', (f) => ({ path: `/suppressions/${f.ids.suppression}/delete`, form: { reason: 'asked again' } })],
  ['/broadcasts', (f) => ({ path: '/broadcasts', form: { list: String(f.ids.listKey), subject: 'News', text: 'Hello' } })],
  ['/broadcasts/:id/status', (f) => ({ path: `/broadcasts/${f.ids.broadcast}/status`, form: { status: 'cancelled' } })],
  ['/templates', (f) => ({ path: '/templates', form: { account: String(f.tenant.account.id), name: 'audited', subject: 'Hi {{ name }}', text: 'Hello {{ name }}' } })],
  ['/templates/:id', (f) => ({ path: `/templates/${f.ids.template}`, form: { subject: 'Hello {{ name }}', text: 'Hello again {{ name }}' } })],
  ['/templates/:id/test', (f) => ({ path: `/templates/${f.ids.template}/test`, form: { to: 'tester@example.com', mailbox: String(f.tenant.mailbox.id) } })],
  ['/templates/:id/restore', (f) => ({ path: `/templates/${f.ids.template}/restore`, form: { version: '1' } })],
  ['/templates/:id/delete', (f) => ({ path: `/templates/${f.ids.template}/delete` })],
  ['/campaigns', (f) => ({ path: '/campaigns', form: { account: String(f.tenant.account.id), name: 'audited', goal: 'plain', mailbox: String(f.tenant.mailbox.id), 'step0.subject': 'Hi', 'step0.body': 'Hello', 'step0.delay_hours': '0' } })],
  ['/campaigns/:id/status', (f) => ({ path: `/campaigns/${f.ids.campaign}/status`, form: { status: 'paused' } })],
  ['/campaigns/:id/mailboxes', (f) => ({ path: `/campaigns/${f.ids.campaign}/mailboxes`, form: { 'box0.use': 'yes', 'box0.mailbox': String(f.tenant.mailbox.id) } })],
  ['/campaigns/:id/steps', (f) => ({ path: `/campaigns/${f.ids.campaign}/steps`, form: { 'step0.subject': 'Hello', 'step0.body': 'Hi there', 'step0.delay_hours': '0' } })],
  ['/campaigns/:id/sending', (f) => ({ path: `/campaigns/${f.ids.campaign}/sending`, form: { unsubscribe: 'on' } })],
  ['/messages/:id/retry', (f) => ({ path: `/messages/${f.ids.failed}/retry` })],
  ['/messages/:id/cancel', (f) => ({ path: `/messages/${f.ids.queued}/cancel` })],
  ['/webhooks', (f) => ({ path: '/webhooks', form: { account: String(f.tenant.account.id), url: 'https://hooks.example.com/in' } })],
  ['/webhooks/:id/enabled', (f) => ({ path: `/webhooks/${f.ids.webhook}/enabled`, form: { enabled: 'no' } })],
  ['/webhooks/:id/rotate', (f) => ({ path: `/webhooks/${f.ids.webhook}/rotate` })],
  ['/webhooks/:id/delete', (f) => ({ path: `/webhooks/${f.ids.webhook}/delete` })],
  ['/domains', (f) => ({ path: '/domains', form: { account: String(f.tenant.account.id), name: 'in.test' } })],
  ['/domains/:id/verify', (f) => ({ path: `/domains/${f.ids.domain}/verify` })],
  ['/domains/:id/rotate', (f) => ({ path: `/domains/${f.ids.domain}/rotate` })],
  ['/mx/routes', (f) => ({ path: '/mx/routes', form: { account: String(f.tenant.account.id), domain: String(f.ids.domain), match: 'in', action: 'hold' } })],
  ['/mx/routes/:id', (f) => ({ path: `/mx/routes/${f.ids.route}`, form: { action: 'reject' } })],
  ['/mx/routes/:id/delete', (f) => ({ path: `/mx/routes/${f.ids.route}/delete` })],
  ['/mx/messages/:id/release', (f) => ({ path: `/mx/messages/${f.ids.held}/release` })],
  ['/mx/messages/:id/drop', (f) => ({ path: `/mx/messages/${f.ids.held2}/drop` })],
  ['/tracking-domains', (f) => ({ path: '/tracking-domains', form: { account: String(f.tenant.account.id), name: 'links.in.test' } })],
  ['/tracking-domains/:id/verify', (f) => ({ path: `/tracking-domains/${f.ids.tracking}/verify` })],
  ['/tracking-domains/:id/delete', (f) => ({ path: `/tracking-domains/${f.ids.tracking}/delete` })],
  ['/domains/:id/delete', (f) => ({ path: `/domains/${f.ids.domain}/delete` })],
  ['/keys/:id/revoke', (f) => ({ path: `/keys/${f.tenant.keyId}/revoke` })],
];

/** After a create, the row it made (the newest of the account), for the later calls. */
async function remember(route: string, f: Fixture, page: string): Promise<void> {
  const account = f.tenant.account.id;
  const newest = { where: { accountId: account }, orderBy: { id: 'desc' as const } };
  if (route === '/users') {
    f.ids.invite = linkToken(/\/admin\/invite\/[A-Za-z0-9_-]+/.exec(page)![0]);
    f.ids.user = (await db().membership.findFirstOrThrow({ where: { accountId: account }, orderBy: { userId: 'desc' } })).userId;
  }
  if (route === '/lists') {
    const list = await db().list.findFirstOrThrow(newest);
    [f.ids.list, f.ids.listKey] = [list.id, list.key];
  }
  if (route === '/suppressions') f.ids.suppression = (await db().suppression.findFirstOrThrow({ where: { accountId: account, email: 'by-hand@example.com' } })).id;
  if (route === '/broadcasts') f.ids.broadcast = (await db().broadcast.findFirstOrThrow(newest)).id;
  if (route === '/templates') f.ids.template = (await db().template.findFirstOrThrow(newest)).id;
  if (route === '/campaigns') f.ids.campaign = (await db().campaign.findFirstOrThrow(newest)).id;
  if (route === '/webhooks') f.ids.webhook = (await db().webhook.findFirstOrThrow(newest)).id;
  if (route === '/domains') f.ids.domain = (await db().domain.findFirstOrThrow(newest)).id;
  if (route === '/mx/routes') f.ids.route = (await db().inboundRoute.findFirstOrThrow(newest)).id;
  if (route === '/tracking-domains') f.ids.tracking = (await db().trackingDomain.findFirstOrThrow(newest)).id;
}

/** The console's POST routes, read from its router (every page's routes, the sign-in's and the strangers' pages). */
function consolePosts(): string[] {
  const budget = new BodyBudget({ budgetBytes: 1 << 20, bodyLimitBytes: 1 << 20 });
  const router = consoleRouter(db(), { budget, signInBudget: budget, failures: new AuthFailures(20) }, deliveryRegistrations().kinds);
  const layers = (router as unknown as { stack: { route?: { path: string; methods: Record<string, boolean> } }[] }).stack;
  return layers.filter((l) => l.route?.methods.post).map((l) => l.route!.path);
}

it('has a call, or a reason, for every POST route of the console', () => {
  const posts = consolePosts();
  expect(posts.length).toBeGreaterThan(40);
  const covered = new Set([...CALLS.map(([route]) => route), ...Object.keys(NOT_CHANGES), ...Object.keys(CHECKED_ELSEWHERE)]);
  expect(posts.filter((route) => !covered.has(route))).toEqual([]);
  expect([...covered].filter((route) => !posts.includes(route))).toEqual([]);
});

it('writes one entry, via the console, with the request id, for every change a form makes', async () => {
  const tenant = await makeTenant();
  const send = (to: string) => asAdmin(ctx.api).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to, subject: 'one', text: 'x' });
  expect([(await send('someone@example.com')).status, (await send('other@example.com')).status]).toEqual([202, 202]);
  const messageTo = (to: string) => db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to } });
  const [queued, failed] = [await messageTo('someone@example.com'), await messageTo('other@example.com')];
  await db().message.update({ where: { id: failed.id }, data: { status: 'failed' } });
  const f: Fixture = { tenant, ids: { queued: queued.id, failed: failed.id, held: (await mxMessage(tenant.account.id)).id, held2: (await mxMessage(tenant.account.id)).id } };

  // the admin token's console session (a person's: the Chromium test below)
  const agent = request.agent(ctx.api.app);
  const signin = await agent.get('/admin/signin');
  const signinCsrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
  expect((await agent.post('/admin/signin').type('form').send({ _csrf: signinCsrf, token: ADMIN_TOKEN })).status).toBe(303);
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await agent.get('/admin')).text)![1]!;

  const missing: string[] = [];
  for (const [route, call] of CALLS) {
    if (route === '/mx/routes') await db().domain.update({ where: { id: Number(f.ids.domain) }, data: { status: 'verified', inbound: true } });
    const { path, form, file } = call(f);
    const requestId = `console-${randomUUID()}`;
    // the invitation is accepted by the invited person, in a browser of their own (its form's token: its nonce cookie)
    const client = route === '/invite/:token' ? request.agent(ctx.api.app) : agent;
    const token = route === '/invite/:token' ? /name="_csrf" value="([^"]+)"/.exec((await client.get(`/admin${path}`)).text)![1]! : csrf;
    const req = client.post(`/admin${path}`).set('X-Request-Id', requestId);
    const res = await (file !== undefined ? req.field('_csrf', token).attach('file', Buffer.from(file), 'audited.csv') : req.type('form').send({ _csrf: token, ...form }));
    if (res.status >= 400) throw new Error(`${route}: ${res.status} ${/class="error"[^>]*>([^<]*)/.exec(res.text)?.[1] ?? res.text.slice(0, 300)}`);
    await remember(route, f, res.text);
    const entries = await db().auditEntry.findMany({ where: { requestId } });
    if (entries.length !== 1) missing.push(`${route}: ${entries.length} entries`);
    else if (route !== '/invite/:token') expect(entries[0]).toMatchObject({ actorKind: 'admin-token', via: 'console' });
  }
  expect(missing).toEqual([]);

  // a form that changes nothing writes nothing
  const before = await db().auditEntry.count();
  const list = await makeList(tenant.account.id, tenant.mailbox.id);
  expect((await agent.post('/admin/broadcasts/audience').type('form').send({ _csrf: csrf, list: list.key })).status).toBe(200);
  expect(await db().auditEntry.count()).toBe(before);
});

it("a person's sign-out everywhere ends each of their sessions and writes one entry with how many ended", async () => {
  const tenant = await makeTenant();
  const email = `everywhere-${randomUUID()}@example.com`;
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: 'E', role: 'viewer', account: tenant.account.id }).expect(201);
  const first = consoleClient(ctx.api);
  expect((await first.post(`/admin/invite/${linkToken(invited.body.invite_url)}`, { password: 'correct horse battery staple' })).status).toBe(303);
  const second = consoleClient(ctx.api);
  expect((await second.signIn(email, 'correct horse battery staple')).status).toBe(303);
  const user = await db().user.findUniqueOrThrow({ where: { email } });
  expect(await db().userSession.count({ where: { userId: user.id } })).toBe(2);

  const requestId = `everywhere-${randomUUID()}`;
  const csrf = await first.csrf('/admin');
  const out = await first.agent.post('/admin/signout-everywhere').set('X-Request-Id', requestId).type('form').send({ _csrf: csrf });
  expect(out.status).toBe(303);
  expect(await db().userSession.count({ where: { userId: user.id } })).toBe(0);
  expect((await second.agent.get('/admin')).headers.location).toBe('/admin/signin');
  const entries = await db().auditEntry.findMany({ where: { requestId } });
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({ action: 'sign-out-everywhere', resource: 'user', resourceId: String(user.id), actorKind: 'user', actorId: user.id, actorLabel: email, via: 'console', accountId: tenant.account.id, after: { sessions: 2 } });
});
