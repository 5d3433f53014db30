import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';
import { linkToken } from './support';

/**
 * The console in Chromium (docs/teams.md): a person's form writes an audit entry naming them as its actor, with the
 * browser's address and the request's id; a person of another account posting the same form gets a 403 page naming the
 * permission and the account (it cannot open the page either), and nothing changes.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx);

/** A person with `role` in `account`, signed in through their invitation in a browser context of their own. */
async function personPage(account: number, role: string): Promise<{ page: Page; id: number; email: string }> {
  const email = `b-${randomUUID()}@example.com`;
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: 'B', role, account }).expect(201);
  const page = await (await view.browser.newContext()).newPage();
  await page.goto(`${view.base}/admin/invite/${linkToken(invited.body.invite_url)}`);
  await page.fill('input[name=password]', 'a long and quiet evening');
  await page.click('button:has-text("Set password")');
  expect(await page.locator('.flash').innerText()).toBe('Welcome: your password is set.');
  return { page, id: invited.body.user.id, email };
}

it("a person's form writes an entry with them as its actor; another account's person is refused", async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id);
  const owner = await personPage(tenant.account.id, 'owner');
  const stranger = await personPage((await makeTenant()).account.id, 'owner');

  // the series editor's new row: subject, text and delay
  const save = async (page: Page, step: { subject: string; text: string; delay_hours: number }) => {
    await page.goto(`${view.base}/admin/lists/${list.id}`);
    await page.locator('#series input[name$=".subject"]').last().fill(step.subject);
    await page.locator('#series textarea[name$=".text"]').last().fill(step.text);
    await page.locator('#series input[name$="delay_hours"]').last().fill(String(step.delay_hours));
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button:has-text("Save the series")')]);
    return answer;
  };

  // the stranger: the list's page is not theirs to read (403, the account named), and its form posted from their own
  // session is refused too (403, the permission and the account named): nothing changed, no entry
  const entriesBefore = await db().auditEntry.count({ where: { resource: 'list', resourceId: String(list.id) } });
  const page = await stranger.page.goto(`${view.base}/admin/lists/${list.id}`);
  expect(page!.status()).toBe(403);
  expect(await stranger.page.locator('.error').innerText()).toContain(`needs read in account ${tenant.account.id}`);
  await stranger.page.goto(`${view.base}/admin`);
  const csrf = await stranger.page.locator('input[name=_csrf]').first().inputValue();
  const refused = await stranger.page.request.post(`${view.base}/admin/lists/${list.id}/series`, { form: { _csrf: csrf, 'steps[0].subject': 'Taken', 'steps[0].text': 'Taken', 'steps[0].delay_hours': '1' }, maxRedirects: 0 });
  expect(refused.status()).toBe(403);
  expect(await refused.text()).toContain(`needs lists.manage in account ${tenant.account.id}`);
  expect(await db().seriesStep.count({ where: { listId: list.id } })).toBe(0);
  expect(await db().auditEntry.count({ where: { resource: 'list', resourceId: String(list.id) } })).toBe(entriesBefore);

  // the owner: saved, and the entry names them
  const saved = await save(owner.page, { subject: 'Welcome', text: 'Hello', delay_hours: 1 });
  expect(saved.status()).toBe(303);
  expect(await owner.page.locator('.flash').innerText()).toContain('the series has 1 step');
  const entry = await db().auditEntry.findFirstOrThrow({ where: { resource: 'list', resourceId: String(list.id) }, orderBy: { id: 'desc' } });
  expect(entry).toMatchObject({ via: 'console', action: 'update', actorKind: 'user', actorId: owner.id, actorLabel: owner.email, accountId: tenant.account.id, ip: expect.stringMatching(/127\.0\.0\.1/), requestId: expect.any(String) });
  expect(entry.after).toMatchObject({ steps: [expect.objectContaining({ subject: 'Welcome' })] });
});
