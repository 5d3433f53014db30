import type { Page } from 'playwright-core';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';
import { linkToken } from './support';

/** Teams in Chromium: an invitation made on the Users page, accepted, then a person's sign-in and what their role shows. */
jest.setTimeout(90_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx, { signIn: true });
let page: Page;
beforeAll(() => ({ page } = view));

it('invites a viewer from the Users page; they set a password, sign in with email and see no forms they may not use', async () => {
  const tenant = await makeTenant();
  await page.goto(`${view.base}/admin/users`);
  await page.fill('form[action="/admin/users"] input[name=email]', 'vi@example.com');
  await page.fill('form[action="/admin/users"] input[name=name]', 'Vi');
  await page.selectOption('form[action="/admin/users"] select[name=role]', 'viewer');
  await page.selectOption('form[action="/admin/users"] select[name=account]', String(tenant.account.id));
  await page.click('button:has-text("Invite")');
  const invite = await page.locator('#invite-url').innerText();
  expect(invite).toMatch(/\/admin\/invite\//);

  // the invited person, in a browser of their own
  const person = await (await view.browser.newContext()).newPage();
  await person.goto(`${view.base}/admin/invite/${linkToken(invite)}`);
  await person.fill('input[name=password]', 'unbelievable');
  await person.click('button:has-text("Set password")');
  expect(await person.locator('.error').innerText()).toMatch(/most common passwords/);
  await person.fill('input[name=password]', 'a long and quiet evening');
  await person.click('button:has-text("Set password")');
  expect(await person.locator('.flash').innerText()).toBe('Welcome: your password is set.');
  const [cookie] = await person.context().cookies();
  expect(cookie).toMatchObject({ name: 'ms_console', httpOnly: true, sameSite: 'Lax' });

  // a viewer: no Users page, no Queues, and the keys page without its create form
  const nav = await person.locator('header nav').innerText();
  expect(nav).not.toContain('Users');
  expect(nav).not.toContain('Queues');
  await person.goto(`${view.base}/admin/keys`);
  expect(await person.locator('form[action="/admin/keys"]').count()).toBe(0);
  expect(await person.locator('table').innerText()).toContain('Last used');

  // sign out, then in again with email and password
  await person.click('button:has-text("Sign out everywhere")');
  expect(new URL(person.url()).pathname).toBe('/admin/signin');
  await person.fill('input[name=email]', 'vi@example.com');
  await person.fill('input[name=password]', 'wrong password here');
  await person.click('#signin-person');
  expect(await person.locator('.error').innerText()).toBe('Wrong email or password.');
  await person.fill('input[name=password]', 'a long and quiet evening');
  await person.click('#signin-person');
  expect(await person.locator('.flash').innerText()).toBe('Signed in as vi@example.com.');

  // promoted to owner by the admin: the next page shows what an owner may do
  await page.goto(`${view.base}/admin/users`);
  const row = page.locator('tr', { hasText: 'vi@example.com' });
  await row.locator('select[name=role]').selectOption('owner');
  await row.locator('select[name=account]').selectOption(String(tenant.account.id));
  await row.locator('button:has-text("Set role")').click();
  expect(await page.locator('.flash').innerText()).toBe('Roles of vi@example.com changed.');
  await person.goto(`${view.base}/admin/keys`);
  expect(await person.locator('form[action="/admin/keys"]').count()).toBe(1);
  expect(await person.locator('header nav').innerText()).toContain('Users');
});
