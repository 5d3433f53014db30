import type { Page } from 'playwright-core';
import { db, rawQuery } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { useConsoleBrowser } from './browser';
import { seedConsole, type Seeded } from './seed';

/**
 * The suppressions page and the subscribers across lists, through the console's forms in chromium: why and since when
 * an address gets no mail, removing one with a reason (in the audit log with the change, and refused without one),
 * adding one by hand, the CSV export; finding a person by address, field or tag, and their page's lists and mail.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const view = useConsoleBrowser(ctx, { signIn: true, viewport: { width: 1366, height: 900 } });
let page: Page;
let base: string;
let seeded: Seeded;
beforeAll(async () => {
  ({ page, base } = view);
  seeded = await seedConsole(ctx.api);
}, 120_000);

const go = (p: string) => page.goto(base + p);
const flash = () => page.locator('.flash').innerText();

describe('the suppressions page', () => {
  it('shows why and since when each address was suppressed, unsubscribes among them', async () => {
    await db().subscriber.updateMany({ where: { listId: seeded.list, email: 'reader3@readers.test' }, data: { status: 'unsubscribed', unsubscribedAt: new Date() } });
    await go(`/admin/suppressions?account=${seeded.account}`);
    const rows = await page.locator('#suppressions tbody tr').allInnerTexts();
    expect(rows.find((r) => r.includes('gone@dead.test'))).toMatch(/bounce \(userunknown\)\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|\d+ min ago)\)\s+550 5\.1\.1/);
    expect(rows.find((r) => r.includes('angry@complain.test'))).toMatch(/complaint/);
    expect(rows.find((r) => r.includes('reader3@readers.test'))).toMatch(/unsubscribe from Weekly letter[\s\S]*the person's choice/);
    await go(`/admin/suppressions?account=${seeded.account}&reason=complained`);
    expect(await page.locator('#suppressions tbody tr').count()).toBe(1);
    await go(`/admin/suppressions?q=DEAD.test`);
    expect(await page.locator('#suppressions tbody tr td:first-child').allInnerTexts()).toEqual(['gone@dead.test']);
  });

  it('removes one only with a reason, and writes the reason to the audit log with the removal', async () => {
    await go('/admin/suppressions?q=gone@dead.test');
    const row = page.locator('#suppressions tbody tr', { hasText: 'gone@dead.test' });
    // the browser would refuse an empty reason itself: send a blank one past it, as a script could
    await row.locator('input[name=reason]').evaluate((i) => i.removeAttribute('required'));
    await row.locator('input[name=reason]').evaluate((i) => i.removeAttribute('minlength'));
    const refused = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), row.locator('button:has-text("Remove")').click()]);
    expect(refused[0].status()).toBe(400);
    expect(await page.locator('.error').innerText()).toMatch(/reason/);
    expect(await db().suppression.count({ where: { accountId: seeded.account, email: 'gone@dead.test' } })).toBe(1);

    await go('/admin/suppressions?q=gone@dead.test');
    await row.locator('input[name=reason]').fill('mailbox fixed, confirmed by phone');
    await row.locator('button:has-text("Remove")').click();
    expect(await flash()).toBe('gone@dead.test removed from the suppressions: mail may reach it again.');
    expect(await db().suppression.count({ where: { accountId: seeded.account, email: 'gone@dead.test' } })).toBe(0);
    const entry = await db().auditEntry.findFirstOrThrow({ where: { resource: 'suppression', action: 'delete' }, orderBy: { id: 'desc' } });
    expect(entry).toMatchObject({ via: 'console', actorLabel: 'admin token', accountId: seeded.account, after: { removed_because: 'mailbox fixed, confirmed by phone' } });
    expect(entry.before).toMatchObject({ email: 'gone@dead.test', reason: 'bounced' });
  });

  it('adds an address by hand (audited), refuses a bad one, and exports the list', async () => {
    await go('/admin/suppressions');
    const form = page.locator('form', { hasText: 'Add by hand' });
    await form.locator('select[name=account]').selectOption(String(seeded.account));
    await form.locator('input[name=email]').fill('Quiet@Example.TEST');
    await form.locator('input[name=detail]').fill('asked by phone');
    await form.locator('button:has-text("Suppress")').click();
    expect(await flash()).toBe('quiet@example.test suppressed.');
    expect(await db().suppression.findFirst({ where: { accountId: seeded.account, email: 'quiet@example.test' } })).toMatchObject({ reason: 'manual', detail: 'asked by phone' });
    expect(await db().auditEntry.count({ where: { resource: 'suppression', action: 'create', accountId: seeded.account } })).toBe(1);

    const before = await db().suppression.count();
    await go('/admin/suppressions');
    await form.locator('select[name=account]').selectOption(String(seeded.account));
    await form.locator('input[name=email]').evaluate((i) => ((i as unknown as { type: string }).type = 'text'));
    await form.locator('input[name=email]').fill('not an address');
    await form.locator('input[name=detail]').fill('asked by phone');
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), form.locator('button:has-text("Suppress")').click()]);
    expect(answer.status()).toBe(400);
    expect(await db().suppression.count()).toBe(before);

    const csv = await page.request.get(`${base}/admin/suppressions.csv?account=${seeded.account}`);
    expect(csv.headers()['content-type']).toMatch(/text\/csv/);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('account,email,reason,bounce_reason,detail,created_at');
    expect(lines.slice(1).map((l) => l.split(',')[1]).sort()).toEqual(['angry@complain.test', 'quiet@example.test']);
  });
});

describe('subscribers across lists', () => {
  it('finds people by part of an address, a field or a tag, in every list', async () => {
    const other = await db().list.create({ data: { accountId: seeded.account, mailboxId: seeded.mailbox, name: 'Product news', key: `other-${seeded.list}`, confirm: false } });
    await db().subscriber.create({ data: { listId: other.id, email: 'reader5@readers.test', status: 'active', fields: { plan: 'pro' } } });
    await go(`/admin/subscribers?q=${encodeURIComponent('READER5@')}`);
    expect(await page.locator('#subscribers tbody td:nth-child(3)').allInnerTexts()).toEqual(['Product news', 'Weekly letter']);
    await go(`/admin/subscribers?q=${encodeURIComponent('plan=free')}`);
    // readers 0, 3, 6, 9 are on the free plan
    expect((await page.locator('#subscribers tbody td:first-child').allInnerTexts()).sort()).toEqual(['reader0@readers.test', 'reader3@readers.test', 'reader6@readers.test', 'reader9@readers.test']);
    await go(`/admin/subscribers?q=${encodeURIComponent('tag:vip')}`);
    expect(await page.locator('#subscribers tbody tr').count()).toBe(6);
    await go(`/admin/subscribers?q=${encodeURIComponent('nobody-here@')}`);
    expect(await page.locator('#subscribers tbody tr').count()).toBe(0);
  });

  it("shows one subscriber's lists, mail, tags and fields", async () => {
    const five = await db().subscriber.findFirstOrThrow({ where: { listId: seeded.list, email: 'reader5@readers.test' } });
    await rawQuery(
      db(),
      `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, created_at, updated_at)
       VALUES (gen_random_uuid(), $1, $2, 'broadcast', 'reader5@readers.test', 'Winter news', '<w5@acme.test>', 'sent', 1, now(), now())`,
      [seeded.account, seeded.mailbox],
    );
    await go(`/admin/subscribers/${five.id}`);
    expect(await page.locator('#subscriber-lists tbody td:first-child').allInnerTexts()).toEqual(['Product news · their row there', 'Weekly letter']);
    expect(await page.locator('#subscriber-mail tbody tr').first().innerText()).toMatch(/broadcast\s+Winter news\s+sent/);
    expect(await page.locator('table').first().innerText()).toMatch(/Tags\s+vip, early/);
    expect(await page.locator('table').first().innerText()).toMatch(/plan: pro/);
  });
});

describe('the overview', () => {
  it("shows the range's key rates as figures above full-width charts", async () => {
    await go('/admin?range=24h');
    const accepted = Number((await page.locator('dl.rates .rate:last-child dd').innerText()).replace(/,/g, ''));
    // the seeded messages of the last 24 hours (one each half hour), besides the test's own
    expect(accepted).toBeGreaterThanOrEqual(47);
    expect(await page.locator('#rate-delivered dd').innerText()).toMatch(/^\d{1,3}\.\d %$/);
    expect(await page.locator('#rate-bounced dd').innerText()).toMatch(/^\d{1,3}\.\d %$/);
    expect(await page.locator('#rate-complained dd').innerText()).toBe('by the day only');
    const widths = await page.locator('.chart-figure svg').evaluateAll((svgs) => svgs.map((s) => [s.getBoundingClientRect().width, s.parentElement!.getBoundingClientRect().width]));
    for (const [svg, box] of widths) expect(svg!).toBeGreaterThan(box! * 0.9);
  });
});
