import { useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';
import { published } from './support';
import { getDomain } from '../../apps/core/src/domains';
import { db } from '../../apps/core/src/db';

// a browser on a busy 2-core machine: steps of a few seconds each
jest.setTimeout(120_000);

const dns = useDns(['test']);
const ctx = useApi();
const view = useConsoleBrowser(ctx, { signIn: true });

it('the console adds a domain, shows its records to copy, what DNS answered after "Check now", and rotates its keys', async () => {
  const { page, base } = view;
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'news@console.test' });
  await page.goto(`${base}/admin/domains`);
  await page.selectOption('select[name=account]', String(account.id));
  await page.fill('input[name=name]', 'Console.TEST');
  await page.click('button:has-text("Add domain")');
  expect(await page.locator('.flash').innerText()).toMatch(/Domain console\.test added/);
  expect(await page.locator('h1').innerText()).toBe('Domain console.test');
  const rows = page.locator('#records tr.record');
  expect(await rows.count()).toBe(4);
  expect(await page.locator('#records td.status-missing').count()).toBe(4);
  // one click on a value selects the whole of it, ready to copy (the console runs no script)
  const spf = page.locator('tr.record[data-purpose=spf] code.value');
  expect(await spf.innerText()).toBe('v=spf1 ip4:127.0.0.1 ~all');
  await spf.click();
  // the browser's own selection (the function runs in the page, where `getSelection` is the window's)
  expect(await page.evaluate('String(getSelection())')).toBe('v=spf1 ip4:127.0.0.1 ~all');
  expect(await page.content()).not.toMatch(/PRIVATE KEY/);

  const id = Number(new URL(page.url()).pathname.split('/').pop());
  const domain = await getDomain(db(), id);
  // published with a second SPF record: "Check now" shows both as DNS answered them, and why that is wrong
  await dns.publish([...published(domain.records), { type: 'TXT', host: 'console.test', strings: ['v=spf1 -all'] }]);
  await page.click('button:has-text("Check now")');
  expect(await page.locator('.flash').innerText()).toBe('Checked: pending.');
  expect(await page.locator('tr.record[data-purpose=dkim] td.status-found').count()).toBe(2);
  const spfRow = page.locator('tr.record[data-purpose=spf]');
  expect(await spfRow.locator('td.status-wrong').innerText()).toMatch(/2 v=spf1 records.*permerror/s);
  expect(await spfRow.locator('code.seen').allInnerTexts()).toEqual(expect.arrayContaining(['v=spf1 ip4:127.0.0.1 ~all', 'v=spf1 -all']));
  expect(await page.locator('#domain-reason').innerText()).toMatch(/SPF wrong at console\.test/);

  await dns.publish(published(domain.records));
  await page.click('button:has-text("Check now")');
  expect(await page.locator('.flash').innerText()).toBe('Checked: verified.');
  await page.click('button:has-text("Rotate keys")');
  expect(await page.locator('.flash').innerText()).toMatch(/New keys made/);
  expect(await rows.count()).toBe(6);
  expect(await page.locator('#records').innerText()).toMatch(/new key: publish it/);

  await page.goto(`${base}/admin/domains`);
  expect(await page.locator('td.status-verified').innerText()).toBe('verified');
});
