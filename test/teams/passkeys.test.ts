import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';
import { linkToken } from './support';

/**
 * Passkeys (docs/teams.md) in Chromium with its virtual authenticator (CDP WebAuthn, ctap2 with user verification),
 * checked by @simplewebauthn/server: an owner requires a second factor in the console, adds a passkey when sent to
 * enrol, and signs in with it after the password; a replayed passkey answer is refused.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx);
const PASSWORD = 'correct horse battery staple';

let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
afterAll(async () => {
  await context?.close();
});

/** The console at `localhost`: the relying party must be a host name (browsers refuse an IP address). */
const base = () => view.base.replace('127.0.0.1', 'localhost');

async function signInWithPassword(email: string) {
  await page.goto(`${base()}/admin/signin`);
  await page.fill('input[name=email]', email);
  await page.fill('form:has(#signin-person) input[name=password]', PASSWORD);
  await page.click('#signin-person');
}

it('an owner requires a second factor, adds a passkey when sent to enrol, and signs in with it', async () => {
  const account = await makeAccount();
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email: 'pk@example.com', name: 'Pk', role: 'owner', account: account.id });
  expect(invited.status).toBe(201);

  context = await view.browser.newContext();
  page = await context.newPage();
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });

  await page.goto(`${base()}/admin/invite/${linkToken(invited.body.invite_url)}`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button:has-text("Set password")');
  expect(await page.locator('.flash').innerText()).toBe('Welcome: your password is set.');

  // the owner requires a second factor of the account on the Security page; the next page sends them to enrol
  await page.goto(`${base()}/admin/security`);
  await page.locator('tr', { hasText: `${account.id} · ` }).locator('button:has-text("Require")').click();
  expect(await page.locator('.flash').innerText()).toBe(`Account ${account.id} now requires a second factor.`);
  const sent = await page.goto(`${base()}/admin/keys`);
  expect(new URL(page.url()).pathname).toBe('/admin/security');
  expect(await page.locator('#enrol-first').innerText()).toMatch(/requires a second factor/);
  // the console's only script runs on this page (its policy allows the console's own scripts here, nowhere else)
  expect(sent!.headers()['content-security-policy']).toMatch(/script-src 'self'$/);
  await page.fill('form[data-passkey] input[name=name]', 'Laptop');
  await page.click('#add-passkey');
  await page.waitForSelector('.flash');
  expect(await page.locator('.flash').innerText()).toBe('Passkey Laptop added.');
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  expect(credentials).toHaveLength(1);
  const [stored] = await db().passkey.findMany({ where: { user: { email: 'pk@example.com' } } });
  expect(Buffer.from(stored!.id, 'base64url').equals(Buffer.from(credentials[0]!.credentialId, 'base64'))).toBe(true);
  expect(await db().auditEntry.count({ where: { action: 'add-passkey', actorLabel: 'pk@example.com' } })).toBe(1);
  await page.goto(`${base()}/admin/keys`);
  expect(new URL(page.url()).pathname).toBe('/admin/keys');

  // sign out; the password alone now opens only the second-factor page
  await page.click('button:text-is("Sign out")');
  await signInWithPassword('pk@example.com');
  expect(new URL(page.url()).pathname).toBe('/admin/signin/second-factor');
  await page.goto(`${base()}/admin/keys`);
  expect(new URL(page.url()).pathname).toBe('/admin/signin');

  await signInWithPassword('pk@example.com');
  let posted = '';
  await page.route('**/admin/signin/second-factor/passkey', async (route) => {
    posted = route.request().postData() ?? '';
    await route.continue();
  });
  await page.click('#second-factor-passkey');
  await page.waitForSelector('.flash');
  expect(await page.locator('.flash').innerText()).toBe('Signed in as pk@example.com.');
  expect(new URL(page.url()).pathname).toBe('/admin');
  const used = await db().passkey.findUniqueOrThrow({ where: { id: stored!.id } });
  expect(used.lastUsedAt).not.toBeNull();
  expect((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials[0]!.signCount).toBeGreaterThan(0);

  // the same answer again, in a new pending session: its challenge is another, so it is refused
  await page.unroute('**/admin/signin/second-factor/passkey');
  await page.click('button:text-is("Sign out")');
  await signInWithPassword('pk@example.com');
  const csrf = await page.locator('form[data-passkey] input[name=_csrf]').inputValue();
  const replay = await page.request.post(`${base()}/admin/signin/second-factor/passkey`, { form: { _csrf: csrf, response: new URLSearchParams(posted).get('response')! } });
  expect(replay.status()).toBe(401);
  expect(await replay.text()).toContain('The passkey was not accepted');
  await page.goto(`${base()}/admin/keys`);
  expect(new URL(page.url()).pathname).toBe('/admin/signin');
});
