import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { runImport } from '../../apps/core/src/imports';
import { Verifier } from '../../apps/core/src/verify';
import { as, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';

/** The verification on the console's rows and import pages, in a real browser through the forms. */
jest.setTimeout(90_000);

useDns(['test'], [
  { type: 'MX', host: 'good.test', target: 'mx.good.test' },
  { type: 'A', host: 'mx.good.test', address: '127.0.0.1' },
  { type: 'MX', host: 'nomail.test', target: '.', priority: 0 },
]);
const ctx = useApi();
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

it("shows each subscriber's and prospect's verification on their rows, and an import's counts by result", async () => {
  const tenant = await makeTenant({ prospects: true });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const api = as(ctx.api, tenant.token);
  await api.post('/api/v1/subscribers').send({ list: list.key, email: 'ann@nomail.test', verify: 'flag' }).expect(200);
  await api.post('/api/v1/subscribers').send({ list: list.key, email: 'bob@good.test' }).expect(200);
  await page.goto(`${base}/admin/lists/${list.id}`);
  const row = (email: string) => page.locator('tr', { hasText: email }).locator('td').last().innerText();
  expect(await row('ann@nomail.test')).toMatch(/^undeliverable \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+\)\)$/);
  expect(await row('bob@good.test')).toBe('-');

  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
  await api.post('/api/v1/prospects').send({ campaign: campaign.id, verify: 'flag', prospects: [{ email: 'info@good.test' }] }).expect(200);
  await page.goto(`${base}/admin/campaigns/${campaign.id}`);
  expect(await row('info@good.test')).toMatch(/^risky \(/);

  // pasted lines with "block undeliverable": the worker's part run here, with a verifier as the worker makes one
  await page.goto(`${base}/admin/lists/${list.id}`);
  await page.fill('textarea[name=csv]', 'cy@good.test,Cy\ndi@nomail.test,Di\n');
  await page.selectOption('form[action$="/import"] select[name=verify]', 'block_undeliverable');
  await page.click('button:has-text("Import")');
  const imported = await db().import.findFirstOrThrow({ where: { listId: list.id }, orderBy: { id: 'desc' } });
  expect(imported.verify).toBe('block_undeliverable');
  await page.goto('about:blank');
  await runImport(db(), imported.id, new Verifier());
  await page.goto(`${base}/admin/imports/${imported.id}`);
  expect(await page.locator('#import-verification').innerText()).toBe('Verified (block_undeliverable): deliverable 1 · risky 0 · undeliverable 1 · unknown 0');
  expect(await page.locator('tbody tr', { hasText: 'nomail.test' }).innerText()).toMatch(/^3\s+undeliverable: nomail\.test publishes a null MX/);
});
