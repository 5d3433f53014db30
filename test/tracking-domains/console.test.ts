import { useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeAccount } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';

// a browser on a busy 2-core machine: steps of a few seconds each
jest.setTimeout(120_000);

useDns(['test'], [
  { type: 'A', host: 'other.mail.test', address: '127.0.0.2' },
  { type: 'CNAME', host: 'track.console.test', target: 'other.mail.test' },
]);
beforeAll(() => {
  process.env.TRACK_HOSTNAME = 'track.mail.test';
});
const ctx = useApi();
const view = useConsoleBrowser(ctx, { signIn: true });

it('the console adds a tracking domain, shows the CNAME to copy, what DNS answered after "Check now", and refuses a bad name', async () => {
  const { page, base } = view;
  const account = await makeAccount();
  await page.goto(`${base}/admin/tracking-domains`);
  await page.selectOption('select[name=account]', String(account.id));
  await page.fill('input[name=name]', 'Track.Console.TEST');
  await page.click('button:has-text("Add tracking domain")');
  expect(await page.locator('.flash').innerText()).toMatch(/Tracking domain track\.console\.test added/);
  const value = page.locator('#record code.value');
  expect(await value.innerText()).toBe('track.mail.test');
  await value.click();
  expect(await page.evaluate('String(getSelection())')).toBe('track.mail.test');

  await page.click('button:has-text("Check now")');
  expect(await page.locator('.flash').innerText()).toBe('Checked: pending.');
  expect(await page.locator('#record code.seen').allInnerTexts()).toEqual(['other.mail.test']);
  expect(await page.locator('#tracking-reason').innerText()).toBe('publish track.console.test CNAME track.mail.test: DNS answered CNAME other.mail.test');
  expect(await page.locator('#certificate').innerText()).toBe('None yet.');

  await page.goto(`${base}/admin/tracking-domains`);
  await page.selectOption('select[name=account]', String(account.id));
  await page.fill('input[name=name]', 'not a name');
  await page.click('button:has-text("Add tracking domain")');
  expect(await page.content()).toMatch(/not a domain name/);
});
