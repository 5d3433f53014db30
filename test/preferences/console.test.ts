import type { Page } from 'playwright-core';
import { useApi } from '../helpers/api';
import { useConsoleBrowser } from '../console/browser';
import { address, listFixture } from '../lists/support';

/** The console's subscriber section (docs/preferences.md): reached from the list, it shows the consent ledger in order and exports it. */
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

it("shows a subscriber's consent ledger in order from the list's page, and exports it as JSON", async () => {
  const f = await listFixture(ctx.api, { confirm: true });
  const email = address('console');
  await f.subscribe({ email, name: 'Cleo' });
  await f.subscribe({ email, confirmed: true });
  await f.unsubscribe({ email });
  const id = (await f.subscriber(email))!.id;

  await page.goto(`${base}/admin/lists/${(f.list as { id: number }).id}`);
  await page.click(`a[href="/admin/subscribers/${id}"]`);
  expect(new URL(page.url()).pathname).toBe(`/admin/subscribers/${id}`);
  expect(await page.locator('h1').innerText()).toBe(`Subscriber ${email}`);
  const rows = await page.locator('#consent tbody tr').allInnerTexts();
  expect(rows.map((r) => r.split('\t').slice(1, 3).join(' '))).toEqual(['subscribe api_key', 'confirm api_key', 'unsubscribe api_key']);

  const exported = await page.request.get(`${base}/admin/subscribers/${id}/consent.json`);
  expect(exported.status()).toBe(200);
  expect(exported.headers()['content-disposition']).toBe(`attachment; filename="subscriber-${id}-consent.json"`);
  const body = await exported.json();
  expect(body.subscriber).toMatchObject({ id, email, name: 'Cleo', status: 'unsubscribed' });
  expect(body.consent.map((c: { kind: string }) => c.kind)).toEqual(['subscribe', 'confirm', 'unsubscribe']);
});
