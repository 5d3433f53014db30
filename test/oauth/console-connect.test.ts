import type { Worker } from 'bullmq';
import { chromium } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { createWorkers } from '../../apps/worker/src/workers';
import { CHROMIUM, useConsoleBrowser } from '../console/browser';
import { as, useApi } from '../helpers/api';
import { makeAccount, makeKey } from '../helpers/factories';
import { AuthServer, CLIENT, XOAuthSmtp } from '../helpers/oauth';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * "Connect a Google / Microsoft mailbox" in chromium, against the tests' authorization server (a custom provider):
 * the authorization-code flow with PKCE back to PUBLIC_URL/admin/oauth/callback, its refusals in words, and the
 * reconnect banner after the consent was revoked.
 */
let port = 0;
// PUBLIC_URL must name the console's own port before the app reads its settings: the provider comes back there
beforeAll(async () => {
  port = await freePort();
  process.env.PUBLIC_URL = `http://127.0.0.1:${port}`;
});
const ctx = useApi();
const web = useConsoleBrowser(ctx, { signIn: true, port: () => port });
const auth = new AuthServer();
let smtp: XOAuthSmtp;
let delivery: Delivery;
let workers: Worker[] = [];

beforeAll(async () => {
  await auth.start();
  smtp = await new XOAuthSmtp(auth).start();
  delivery = createDelivery(db(), deliveryRegistrations());
  workers = createWorkers({ db: db(), delivery, queues: ['delivery'], concurrency: 5 });
}, 30_000);
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  delivery.close();
  await smtp.stop();
  await auth.stop();
});

/** Fills the Connect card for the tests' provider and follows the flow; answers the page's text. */
async function connect(account: number, address: string): Promise<string> {
  const { page, base } = web;
  await page.goto(`${base}/admin/mailboxes`);
  await page.click('a:has-text("Connect a Google / Microsoft mailbox")');
  const card = page.locator('form[action="/admin/mailboxes/connect"]');
  await card.locator('select[name=account]').selectOption(String(account));
  await card.locator('input[name=address]').fill(address);
  await card.locator('select[name=provider]').selectOption('custom');
  await card.locator('summary').click();
  await card.locator('input[name=client_id]').fill(CLIENT.id);
  await card.locator('input[name=client_key]').fill(CLIENT.secret);
  await card.locator('input[name=auth_url]').fill(auth.authUrl);
  await card.locator('input[name=token_url]').fill(auth.tokenUrl);
  await card.locator('input[name=scope]').fill('openid email mail');
  await card.locator('input[name=smtp]').fill(smtp.url(address));
  await card.locator('button:has-text("Connect")').click();
  await page.waitForSelector('#consent');
  await page.click('#consent');
  await page.waitForURL(/\/admin\/oauth\/callback/);
  return page.locator('main').innerText();
}

const mailboxOf = (account: number, address: string) => db().mailbox.findUnique({ where: { accountId_address: { accountId: account, address } } });

test('a mailbox connected in the console sends over XOAUTH2; revoked, it shows the banner; reconnected, its waiting email goes out once', async () => {
  const account = await makeAccount();
  const address = 'sales@corp.test';
  await auth.set({ login: address });
  const text = await connect(account.id, address);
  expect(text).toContain(`${address} is connected`);
  const row = (await mailboxOf(account.id, address))!;
  expect(row).toMatchObject({ authType: 'oauth2', oauthProvider: 'custom', oauthClientId: CLIENT.id, oauthTokenUrl: auth.tokenUrl, oauthAuthUrl: auth.authUrl, authStatus: 'active' });
  expect((await auth.stats()).exchanges).toBeGreaterThanOrEqual(1);
  // written to the audit log by the console's session that started the flow
  expect(await db().auditEntry.findMany({ where: { resource: 'mailbox', resourceId: String(row.id) } })).toMatchObject([{ action: 'create', via: 'console', actorKind: 'admin-token', accountId: account.id, ip: expect.any(String) }]);

  const { token } = await makeKey(account.id, row.id, { daily_limit: 100 });
  const send = (to: string) => as(ctx.api, token).post('/api/v1/send').send({ from: address, to, subject: 'Hi', text: 'Hello' });
  expect((await send('first@dest.test')).status).toBe(202);
  await waitFor(() => smtp.to('first@dest.test').length === 1, { what: 'the first email over XOAUTH2' });
  expect(smtp.to('first@dest.test')[0]!.user).toBe(address);

  // consent revoked at the provider: the next email waits, the console shows the banner
  await auth.revoke(address);
  smtp.dropSessions();
  expect((await send('waiting@dest.test')).status).toBe(202);
  await waitFor(async () => (await mailboxOf(account.id, address))!.authStatus === 'needs_reconnect', { what: 'needs_reconnect' });
  await web.page.goto(`${web.base}/admin/mailboxes`);
  const banner = web.page.locator('.banner', { hasText: `${address} needs reconnecting` });
  await banner.waitFor();
  expect(await banner.innerText()).toContain('none is lost');
  expect(smtp.to('waiting@dest.test')).toHaveLength(0);

  // the banner's button: the same flow again, and the waiting email leaves once
  await banner.locator('button:has-text("Reconnect")').click();
  await web.page.click('#consent');
  await web.page.waitForURL(/\/admin\/oauth\/callback/);
  expect(await web.page.locator('main').innerText()).toContain(`${address} is connected again`);
  await waitFor(() => smtp.to('waiting@dest.test').length === 1, { what: 'the waiting email' });
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(smtp.to('waiting@dest.test')).toHaveLength(1);
  expect((await db().message.findMany({ where: { mailboxId: row.id } })).map((m) => m.status)).toEqual(['sent', 'sent']);
  await web.page.goto(`${web.base}/admin/mailboxes`);
  expect(await web.page.locator('.banner').count()).toBe(0);
}, 60_000);

test('the flow refuses in words: consent refused, wrong account, state mismatch; nothing is created', async () => {
  const account = await makeAccount();
  await auth.set({ deny: true });
  expect(await connect(account.id, 'ann@corp.test')).toContain('Consent refused');

  await auth.set({ login: 'someone.else@corp.test' });
  expect(await connect(account.id, 'ann@corp.test')).toContain('Wrong account: you signed in at the provider as someone.else@corp.test, but this mailbox is ann@corp.test');

  await web.page.goto(`${web.base}/admin/oauth/callback?state=forged&code=abc`);
  expect(await web.page.locator('main').innerText()).toContain('State mismatch');

  // a consent URL opened in another browser (no cookie of the flow, no session) comes back refused
  await auth.set({ login: 'ann@corp.test' });
  const { page, base } = web;
  await page.goto(`${base}/admin/mailboxes`);
  await page.click('a:has-text("Connect a Google / Microsoft mailbox")');
  const card = page.locator('form[action="/admin/mailboxes/connect"]');
  await card.locator('select[name=account]').selectOption(String(account.id));
  await card.locator('input[name=address]').fill('ann@corp.test');
  await card.locator('select[name=provider]').selectOption('custom');
  await card.locator('summary').click();
  await card.locator('input[name=client_id]').fill(CLIENT.id);
  await card.locator('input[name=client_key]').fill(CLIENT.secret);
  await card.locator('input[name=auth_url]').fill(auth.authUrl);
  await card.locator('input[name=token_url]').fill(auth.tokenUrl);
  await card.locator('input[name=smtp]').fill(smtp.url('ann@corp.test'));
  await card.locator('button:has-text("Connect")').click();
  const consentUrl = await page.locator('#consent').getAttribute('href');
  const other = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  try {
    const stranger = await other.newPage();
    await stranger.goto(consentUrl!);
    await stranger.waitForURL(/\/admin\/oauth\/callback/);
    expect(await stranger.locator('main').innerText()).toContain('State mismatch');
  } finally {
    await other.close();
  }
  expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(0);
}, 60_000);
