import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';
import { addSubscriber } from '../broadcasts/support';
import { useConsoleBrowser } from '../console/browser';

/** The console's welcome series (on a list's page) and broadcast audience (compose, count, show), in a real browser. */
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

const flash = () => page.locator('.flash').innerText();

it("sets a list's welcome series from its page, shows its steps, and refuses a step without content", async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  await page.goto(`${base}/admin/lists/${list.id}`);
  expect(await page.locator('#series').innerText()).toContain('No series');
  // the editor's rows: a blank one to add each time
  const blank = page.locator('#series fieldset.step').last();
  await blank.locator('input[name$=".subject"]').fill('Welcome {{name}}');
  await blank.locator('textarea[name$=".text"]').fill('Hello');
  await blank.locator('input[name$=delay_hours]').fill('0');
  await page.click('button:has-text("Save the series")');
  await blank.locator('input[name$=".subject"]').fill('Tips');
  await blank.locator('textarea[name$=".html"]').fill('<p>Tips</p>');
  await blank.locator('input[name$=delay_hours]').fill('48');
  await page.click('button:has-text("Save the series")');
  expect(await flash()).toMatch(/the series has 2 steps/);
  expect(await page.locator('#series tbody tr').first().innerText()).toMatch(/^1\s+Welcome \{\{name\}\}\s+0\s+0\s+0\s+0$/);
  expect(await db().seriesStep.count({ where: { listId: list.id } })).toBe(2);

  await blank.locator('input[name$=".subject"]').fill('Empty');
  await blank.locator('input[name$=delay_hours]').fill('1');
  await page.click('button:has-text("Save the series")');
  expect(await page.content()).toMatch(/each step needs html or text/);
  expect(await db().seriesStep.count({ where: { listId: list.id } })).toBe(2);
});

it('composes a broadcast to a segment, counts the audience first, and shows the segment', async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false, name: `segments ${Date.now()}` });
  await addSubscriber(list.id, `de1-${list.id}@x.org`, { fields: { country: 'DE' } });
  await addSubscriber(list.id, `de2-${list.id}@x.org`, { fields: { country: 'DE' } });
  await addSubscriber(list.id, `fr-${list.id}@x.org`, { fields: { country: 'FR' } });
  await page.goto(`${base}/admin/broadcasts`);
  await page.selectOption('select[name=list]', list.key);
  await page.fill('input[name="field0.name"]', 'country');
  await page.fill('input[name="field0.value"]', 'DE');
  await page.click('button:has-text("Count the audience")');
  expect(await page.locator('#audience-count').innerText()).toContain(`This audience of list ${list.key} is 2 people now.`);

  // the form came back as typed
  await page.fill('input[name=subject]', 'For Germany');
  await page.fill('textarea[name=text]', 'Hallo');
  await page.click('button:has-text("Save draft")');
  expect(await flash()).toMatch(/saved as a draft/);
  expect(await page.locator('#segment').innerText()).toContain('{"fields":{"country":"DE"}}');
});
