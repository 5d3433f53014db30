import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { useConsoleBrowser } from '../console/browser';
import { inboundDomain, sendToMx, useMx } from './support';

/** The console's MX page (docs/mx.md): routes added, changed and deleted; held messages released or dropped; the last messages with their auth results. */
jest.setTimeout(120_000);

const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const mx = useMx(dns);
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

const send = (to: string, subject: string) => sendToMx(mx.port, to, subject);

it('adds, changes and deletes a route; releases and drops held messages; shows the last messages with their auth results', async () => {
  const tenant = await inboundDomain(ctx.api, 'in-console.test', []);
  await page.goto(`${base}/admin/mx`);
  await page.selectOption('form[action="/admin/mx/routes"] select[name=account]', String(tenant.account.id));
  await page.fill('form[action="/admin/mx/routes"] input[name=domain]', 'in-console.test');
  await page.fill('form[action="/admin/mx/routes"] input[name=match]', 'desk');
  await page.selectOption('form[action="/admin/mx/routes"] select[name=action]', 'hold');
  await page.click('text=Add route');
  expect(await page.locator('.flash').innerText()).toMatch(/Route \d+ added: desk -> hold/);
  const route = await db().inboundRoute.findFirstOrThrow({ where: { domainId: tenant.domain.id } });
  expect(route).toMatchObject({ match: 'desk', action: 'hold', endpointId: null, spamThreshold: null });

  // a bad form is refused and changes nothing
  await page.goto(`${base}/admin/mx`);
  await page.selectOption('form[action="/admin/mx/routes"] select[name=account]', String(tenant.account.id));
  await page.fill('form[action="/admin/mx/routes"] input[name=domain]', 'in-console.test');
  await page.fill('form[action="/admin/mx/routes"] input[name=match]', 'a b');
  await page.click('text=Add route');
  expect(await page.content()).toMatch(/match/);
  expect(await db().inboundRoute.count({ where: { domainId: tenant.domain.id } })).toBe(1);

  const kept = await send('desk@in-console.test', 'keep me');
  const binned = await send('desk@in-console.test', 'bin me');
  await page.goto(`${base}/admin/mx`);
  const heldRow = page.locator(`#held-${kept}`);
  expect(await heldRow.innerText()).toMatch(/keep me[\s\S]*route[\s\S]*SPF pass · DKIM none · DMARC none/);
  await heldRow.locator('text=Release').click();
  expect(await page.locator('.flash').innerText()).toContain(`Message ${kept} released.`);
  await page.locator(`#held-${binned}`).locator('text=Drop').click();
  expect(await page.locator('.flash').innerText()).toContain(`Message ${binned} dropped.`);
  expect(await page.locator('table.mx-held tbody tr').count()).toBe(0);
  expect(await db().mxMessage.findUniqueOrThrow({ where: { id: kept } })).toMatchObject({ status: 'delivered' });
  expect(await db().mxMessage.findUniqueOrThrow({ where: { id: binned } })).toMatchObject({ status: 'dropped' });
  expect(await page.locator(`#message-${kept}`).innerText()).toMatch(/delivered[\s\S]*SPF pass/);
  expect(await page.locator(`#message-${binned}`).innerText()).toMatch(/dropped \(route\)/);

  const row = page.locator(`#route-${route.id}`);
  await row.locator('select[name=action]').selectOption('webhook');
  await row.locator('input[name=spam_threshold]').fill('7.5');
  await row.locator('text=Save').click();
  expect(await page.locator('.flash').innerText()).toContain(`Route ${route.id} saved: desk -> webhook.`);
  expect(await db().inboundRoute.findUniqueOrThrow({ where: { id: route.id } })).toMatchObject({ action: 'webhook', spamThreshold: 7.5 });
  await page.locator(`#route-${route.id}`).locator('text=Delete').click();
  expect(await page.locator('.flash').innerText()).toContain(`Route ${route.id} deleted.`);
  expect(await db().inboundRoute.count({ where: { id: route.id } })).toBe(0);
});
