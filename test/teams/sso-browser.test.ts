import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { useConsoleBrowser } from '../console/browser';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { OIDC_CLIENT, OidcProvider } from '../helpers/oidc';

/**
 * "Sign in with SSO" in Chromium: the console's button, oidc-provider's redirects and cookies, the way back. The console
 * is opened as `localhost` and the provider is `127.0.0.1`: the way back is a cross-site navigation, as with a real
 * provider, so the flow's SameSite=Lax cookie is what binds it to this browser.
 */
jest.setTimeout(90_000);
// fixed ports below Linux's ephemeral range (32768-60999), so no connection of another test can hold them
const CONSOLE_PORT = 21101;
const provider = new OidcProvider(21102, `http://localhost:${CONSOLE_PORT}/admin/sso/callback`);
process.env.PUBLIC_URL = `http://localhost:${CONSOLE_PORT}`;
process.env.OIDC_ISSUER = provider.issuer;
process.env.OIDC_CLIENT_ID = OIDC_CLIENT.id;
process.env.OIDC_CLIENT_SECRET = OIDC_CLIENT.secret;
process.env.OIDC_LABEL = 'Example SSO';
process.env.OIDC_ROLE_MAP = JSON.stringify({ 'sales-senders': '1:sender' });

const ctx = useApi();
const view = useConsoleBrowser(ctx, { port: () => CONSOLE_PORT });
let page: Page;
beforeAll(async () => {
  ({ page } = view);
  await provider.start();
  expect((await makeTenant()).account.id).toBe(1);
}, 90_000);
afterAll(() => provider.stop());

const base = `http://localhost:${CONSOLE_PORT}`;

it('signs a person in through the provider from the sign-in page, with the role their group maps to', async () => {
  await provider.login({ sub: 'fay', email: 'fay@example.test', email_verified: true, name: 'Fay', groups: ['sales-senders'] });
  await page.goto(`${base}/admin/signin`);
  await page.click('#signin-sso');
  await page.waitForURL(`${base}/admin`);
  expect(await page.locator('.flash').innerText()).toBe('Signed in as fay@example.test through Example SSO.');
  const nav = await page.locator('header nav').innerText();
  expect(nav).toContain('Templates');
  expect(nav).not.toContain('Users');
  const cookies = await page.context().cookies(`${base}/admin/sso/callback`);
  expect(cookies.find((c) => c.name === 'ms_console')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
  expect(cookies.find((c) => c.name === 'ms_sso_flow')).toBeUndefined();
  expect(await db().user.findUnique({ where: { email: 'fay@example.test' }, include: { memberships: true } })).toMatchObject({ oidcSubject: 'fay', memberships: [{ accountId: 1, role: 'sender' }] });
});

it('shows the refusal on the sign-in page when the groups map to nothing, and signs nobody in', async () => {
  const person = await (await view.browser.newContext()).newPage();
  await provider.login({ sub: 'gus', email: 'gus@example.test', email_verified: true, name: 'Gus', groups: ['marketing'] });
  await person.goto(`${base}/admin/signin`);
  await person.click('#signin-sso');
  await person.waitForURL(/\/admin\/sso\/callback\?/);
  expect(await person.locator('.error').innerText()).toContain('Single sign-on: your identity provider gives you no role here');
  expect((await person.context().cookies(`${base}/admin`)).map((c) => c.name)).not.toContain('ms_console');
  expect(await db().user.count({ where: { email: 'gus@example.test' } })).toBe(0);
});

it('refuses an ID token from another issuer on the sign-in page, and signs nobody in', async () => {
  const person = await (await view.browser.newContext()).newPage();
  await provider.login({ sub: 'hal', email: 'hal@example.test', email_verified: true, name: 'Hal', groups: ['sales-senders'] });
  await provider.forge({ iss: 'http://127.0.0.1:21199' });
  await person.goto(`${base}/admin/signin`);
  await person.click('#signin-sso');
  await person.waitForURL(/\/admin\/sso\/callback\?/);
  expect(await person.locator('.error').innerText()).toContain(`the identity provider's ID token was refused: unexpected iss value, expected ${provider.issuer}`);
  expect((await person.context().cookies(`${base}/admin`)).map((c) => c.name)).not.toContain('ms_console');
  expect(await db().user.count({ where: { email: 'hal@example.test' } })).toBe(0);
});

it('refuses a sign-in started in another browser: the way back carries a state this browser never made', async () => {
  // browser A starts the sign-in (its flow cookie is set) but never follows it to the provider
  const started = await view.browser.newContext();
  const start = await started.request.get(`${base}/admin/sso/start`, { maxRedirects: 0 });
  expect(start.status()).toBe(303);
  const authorize = start.headers().location ?? '';
  expect(authorize.startsWith(provider.issuer)).toBe(true);
  // browser B follows A's link: the provider signs B in and sends it back with A's state
  const other = await (await view.browser.newContext()).newPage();
  await provider.login({ sub: 'ivy', email: 'ivy@example.test', email_verified: true, name: 'Ivy', groups: ['sales-senders'] });
  await other.goto(authorize);
  await other.waitForURL(/\/admin\/sso\/callback\?/);
  expect(await other.locator('.error').innerText()).toContain('this sign-in was started in another browser: start it again in this one');
  expect((await other.context().cookies(`${base}/admin`)).map((c) => c.name)).not.toContain('ms_console');
  expect(await db().user.count({ where: { email: 'ivy@example.test' } })).toBe(0);
});
