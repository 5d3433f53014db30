import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from '../console/browser';
import { linkToken } from './support';

/**
 * The bad input through the console in Chromium (docs/teams.md): a wrong and a reused TOTP code (codes made by
 * Debian's oathtool), an expired invitation and a demoted person's old session are each refused with a clear message
 * and change nothing; "Sign out everywhere" ends every session of the person and is audited; the audit log's page
 * filters what it shows.
 */
jest.setTimeout(180_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx);
const PASSWORD = 'a long and quiet evening';

function oathtool(secret: string, offsetSeconds = 0): string {
  const at = Math.floor(Date.now() / 1000) + offsetSeconds;
  return execFileSync('oathtool', ['--totp', '-b', secret, '--now', `@${at}`], { encoding: 'utf8' }).trim();
}

const newPage = async (): Promise<Page> => (await view.browser.newContext()).newPage();

/** A person invited through the admin API who sets their password in a browser context of their own. */
async function invitedPerson(account: number, role: string): Promise<{ page: Page; id: number; email: string }> {
  const email = `bad-${randomUUID()}@example.com`;
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: 'B', role, account }).expect(201);
  const page = await newPage();
  await page.goto(`${view.base}/admin/invite/${linkToken(invited.body.invite_url)}`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button:has-text("Set password")');
  expect(await page.locator('.flash').innerText()).toBe('Welcome: your password is set.');
  return { page, id: invited.body.user.id, email };
}

async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${view.base}/admin/signin`);
  await page.fill('input[name=email]', email);
  await page.fill('form:has(#signin-person) input[name=password]', PASSWORD);
  await page.click('#signin-person');
}

async function giveCode(page: Page, code: string): Promise<number> {
  await page.fill('input[name=code]', code);
  const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#second-factor-code')]);
  return answer.status();
}

it('refuses a wrong TOTP code and a reused one at sign-in, each with its words and the session still pending', async () => {
  const tenant = await makeTenant();
  const person = await invitedPerson(tenant.account.id, 'sender');
  await person.page.goto(`${view.base}/admin/security`);
  await person.page.click('button:has-text("Set up an authenticator app")');
  const secret = (await person.page.locator('#totp-secret').innerText()).trim();
  await person.page.fill('input[name=code]', oathtool(secret));
  await person.page.click('button:has-text("Confirm")');
  expect(await person.page.locator('#recovery-codes code').count()).toBe(10);
  const enrolled = await db().userTotp.findUniqueOrThrow({ where: { userId: person.id } });

  const browser = await newPage();
  await signIn(browser, person.email);
  expect(new URL(browser.url()).pathname).toBe('/admin/signin/second-factor');
  expect(await giveCode(browser, oathtool(secret, -600))).toBe(401);
  expect(await browser.locator('.error').innerText()).toContain('Wrong code: check the time on your device');
  // the code that confirmed the enrolment is used: refused within its window too
  const step = BigInt(Math.floor(Date.now() / 30_000));
  const fresh = step <= enrolled.lastStep! ? oathtool(secret, 30) : oathtool(secret);
  if (step <= enrolled.lastStep!) {
    expect(await giveCode(browser, oathtool(secret))).toBe(401);
    expect(await browser.locator('.error').innerText()).toContain('That code was used already');
  }
  // nothing changed: the session is still pending (the console sends it to sign in)
  await browser.goto(`${view.base}/admin/lists`);
  expect(new URL(browser.url()).pathname).toBe('/admin/signin');
  await browser.goto(`${view.base}/admin/signin/second-factor`);
  expect(await giveCode(browser, fresh)).toBe(303);
  expect(new URL(browser.url()).pathname).toBe('/admin');

  // the same code in another browser: used already, and no session opens
  const open = await db().userSession.count({ where: { userId: person.id, pending: false } });
  const other = await newPage();
  await signIn(other, person.email);
  expect(await giveCode(other, fresh)).toBe(401);
  expect(await other.locator('.error').innerText()).toContain('That code was used already: wait for the next one');
  expect(await db().userSession.count({ where: { userId: person.id, pending: false } })).toBe(open);
  expect(await db().userSession.count({ where: { userId: person.id, pending: true } })).toBe(1);
});

it('refuses an expired invitation on its page, and sets no password', async () => {
  const tenant = await makeTenant();
  const email = `late-${randomUUID()}@example.com`;
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: 'Late', role: 'viewer', account: tenant.account.id }).expect(201);
  await db().userToken.updateMany({ where: { userId: invited.body.user.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
  const page = await newPage();
  const answer = await page.goto(`${view.base}/admin/invite/${linkToken(invited.body.invite_url)}`);
  expect(answer!.status()).toBe(400);
  expect(await page.locator('.error').innerText()).toContain('this invitation has expired: ask for a new one');
  expect(await page.locator('input[name=password]').count()).toBe(0);
  expect((await db().user.findUniqueOrThrow({ where: { email } })).passwordHash).toBeNull();
});

it("refuses a demoted person's next form on their old session, naming the permission, and changes nothing", async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id);
  const person = await invitedPerson(tenant.account.id, 'admin');
  await person.page.goto(`${view.base}/admin/lists/${list.id}`);
  await asAdmin(ctx.api).patch(`/admin/api/users/${person.id}`).send({ role: 'viewer', account: tenant.account.id }).expect(200);
  // the page was opened while an admin: its form is still there, the session is the same
  await person.page.locator('#series input[name$=".subject"]').last().fill('Taken');
  await person.page.locator('#series textarea[name$=".text"]').last().fill('Taken');
  await person.page.locator('#series input[name$="delay_hours"]').last().fill('1');
  const [answer] = await Promise.all([person.page.waitForResponse((r) => r.request().method() === 'POST'), person.page.click('button:has-text("Save the series")')]);
  expect(answer.status()).toBe(403);
  expect(await person.page.locator('.error').innerText()).toContain('needs lists.manage');
  expect(await db().seriesStep.count({ where: { listId: list.id } })).toBe(0);
  // reading is still theirs
  expect((await person.page.goto(`${view.base}/admin/lists/${list.id}`))!.status()).toBe(200);
});

it('"Sign out everywhere" ends every session of the person and writes one entry; the audit page filters to it', async () => {
  const tenant = await makeTenant();
  const person = await invitedPerson(tenant.account.id, 'owner');
  const second = await newPage();
  await signIn(second, person.email);
  expect(await db().userSession.count({ where: { userId: person.id } })).toBe(2);

  await person.page.goto(`${view.base}/admin`);
  await person.page.click('button:has-text("Sign out everywhere")');
  expect(new URL(person.page.url()).pathname).toBe('/admin/signin');
  expect(await db().userSession.count({ where: { userId: person.id } })).toBe(0);
  await second.goto(`${view.base}/admin/lists`);
  expect(new URL(second.url()).pathname).toBe('/admin/signin');
  const entry = await db().auditEntry.findFirstOrThrow({ where: { action: 'sign-out-everywhere', resourceId: String(person.id) } });
  expect(entry).toMatchObject({ via: 'console', actorKind: 'user', actorLabel: person.email, accountId: tenant.account.id, after: { sessions: 2 } });

  // the owner's audit page, filtered by action: that entry, and no other action
  await signIn(second, person.email);
  await second.goto(`${view.base}/admin/audit`);
  await second.fill('input[name=action]', 'sign-out-everywhere');
  await second.click('button:has-text("Filter")');
  expect(new URL(second.url()).searchParams.get('action')).toBe('sign-out-everywhere');
  const actions = await second.locator('#audit tbody tr td:nth-child(5)').allInnerTexts();
  expect(actions.length).toBeGreaterThan(0);
  expect(new Set(actions)).toEqual(new Set(['sign-out-everywhere']));
  expect(await second.locator('#audit tbody').innerText()).toContain(person.email);
});
