import path from 'node:path';
import type { Page } from 'playwright-core';
import { db, rawQuery } from '../../apps/core/src/db';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { asAdmin, useApi } from '../helpers/api';
import { runTs } from '../helpers/processes';
import { seedOperatorDay, SEEDED, type OperatorDay } from './operator-day';
import { useConsoleBrowser } from './browser';

/**
 * An operator's day in a real browser (Debian's chromium through playwright-core) on a service holding a few thousand
 * messages, seeded by SQL: the search, a message's page with its story, events, webhook deliveries and headers, the
 * retry and cancel buttons (and their admin API calls), a campaign's prospects, the charts' ranges with labels that never
 * overlap, a running broadcast's live view, the queue dashboard on the console session, the import box's limit.
 * CONSOLE_SCREENSHOT=1 writes the pictures of docs/operator.md.
 */
jest.setTimeout(120_000);

const ctx = useApi();
const problems: string[] = [];
const view = useConsoleBrowser(ctx, {
  signIn: true,
  viewport: { width: 1280, height: 900 },
  context: async (context) => {
    context.on('console', (m) => {
      if ((m.type() === 'error' || m.type() === 'warning') && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
    });
    context.on('weberror', (e) => problems.push(e.error().message));
  },
});
let page: Page;
let base: string;
beforeAll(() => ({ page, base } = view));
afterEach(() => expect(problems).toEqual([]));

const shots = process.env.CONSOLE_SCREENSHOT ? path.join(__dirname, '../../docs') : null;
const go = (p: string) => page.goto(base + p);
const flash = () => page.locator('.flash').innerText();

let ids: OperatorDay;
beforeAll(async () => {
  ids = await seedOperatorDay();
}, 120_000);

/** Every pair of text boxes drawn in each chart of the page that overlap (none should). */
async function overlappingLabels(p: Page): Promise<string[]> {
  return p.locator('svg.chart').evaluateAll((charts) => {
    const found: string[] = [];
    for (const chart of charts) {
      const boxes = [...chart.querySelectorAll('text')].map((t) => ({ text: t.textContent ?? '', box: (t as unknown as { getBBox(): { x: number; y: number; width: number; height: number } }).getBBox() }));
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i]!.box;
          const b = boxes[j]!.box;
          if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) found.push(`${chart.querySelector('title')?.textContent}: "${boxes[i]!.text}" over "${boxes[j]!.text}"`);
        }
      }
    }
    return found;
  });
}

const rowsOf = (p: Page) => p.locator('table.messages tbody tr');

describe("an operator's day in the console", () => {
  it('finds messages by domain, paging by keyset through all of them', async () => {
    await go('/admin/messages');
    await page.fill('input[name=q]', 'defer.test');
    await page.click('button:has-text("Find")');
    expect(await page.locator('#search-kind').innerText()).toMatch(/messages to any address at this domain/);
    const seen = new Set<string>();
    for (let pages = 0; pages < 20; pages++) {
      const recipients = await rowsOf(page).locator('td:nth-child(4)').allInnerTexts();
      const links = await rowsOf(page).locator('td:nth-child(1) a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      expect(recipients.every((r) => r.endsWith('@defer.test'))).toBe(true);
      for (const l of links) seen.add(l!);
      if (pages === 0 && shots) await page.screenshot({ path: path.join(shots, 'operator-search.png') });
      const older = page.locator('a[rel=next]');
      if (!(await older.count())) break;
      await older.click();
    }
    // every message to the domain once, none twice: a fifth of the seeded ones
    expect(seen.size).toBe(SEEDED / 5);
  });

  it('finds by subject words, by id, by Message-ID, by status and dates', async () => {
    await go(`/admin/messages?q=${encodeURIComponent('password reminder')}`);
    expect(await page.locator('#search-kind').innerText()).toMatch(/subject has all these words/);
    const subjects = await rowsOf(page).locator('td:nth-child(5)').allInnerTexts();
    expect(subjects.length).toBe(50);
    expect(subjects.every((s) => s.startsWith('Password reminder '))).toBe(true);

    await go(`/admin/messages?q=${ids.story}`);
    expect(await rowsOf(page).count()).toBe(1);
    await go(`/admin/messages?q=${encodeURIComponent('<order-77@acme.test>')}`);
    expect(await rowsOf(page).locator('td:nth-child(4)').allInnerTexts()).toEqual(['ada@story.test']);
    await go(`/admin/messages?q=${encodeURIComponent('R7@D0.example')}`);
    expect(new Set(await rowsOf(page).locator('td:nth-child(4)').allInnerTexts())).toEqual(new Set(['r7@d0.example']));

    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await go(`/admin/messages?status=bounced&from=${yesterday}&to=${yesterday}`);
    const created = await rowsOf(page).locator('td:nth-child(1)').allInnerTexts();
    const statuses = await rowsOf(page).locator('td:nth-child(6)').allInnerTexts();
    expect(created.length).toBeGreaterThan(0);
    expect(created.every((c) => c.startsWith(yesterday))).toBe(true);
    expect(new Set(statuses)).toEqual(new Set(['bounced']));

    // a bad date is a refusal page, not a crash
    const res = await go('/admin/messages?from=2026-13-45');
    expect(res!.status()).toBe(400);
  });

  it("tells a message's story: its state changes, events, webhook deliveries and headers", async () => {
    await go(`/admin/messages?q=${encodeURIComponent('ada@story.test')}`);
    await rowsOf(page).first().locator('td:nth-child(5) a').click();
    expect(new URL(page.url()).pathname).toBe(`/admin/messages/${ids.story}`);
    const steps = await page.locator('table.story tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    const what = steps.map((s) => s[1]);
    expect(what).toEqual(['accepted', 'attempt 1', 'attempt 2', 'opened', 'clicked', 'bounced']);
    expect(steps[1]![2]).toBe('deferred: 451 4.7.1 Greylisted, try again in 5 minutes');
    expect(steps[2]![2]).toBe('sent: 250 2.0.0 OK id=77');
    expect(steps[5]![2]).toMatch(/reason mailboxfull \(mailbox\), status 5\.2\.2, code 552: 552 5\.2\.2 mailbox full/);
    // in time order
    expect([...steps.map((s) => s[0])].sort()).toEqual(steps.map((s) => s[0]));
    const events = page.locator('section.event');
    expect(await events.count()).toBe(2);
    expect(await events.first().innerText()).toMatch(/message\.sent/);
    expect(await events.first().locator('tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/1\s+HTTP 503: Service Unavailable/), expect.stringMatching(/2\s+HTTP 200/)]);
    const headers = await page.locator('pre.headers').innerText();
    expect(headers).toMatch(/^Message-ID: <order-77@acme\.test>$/m);
    expect(headers).toMatch(/^Subject: Your order 77 has shipped$/m);
    expect(headers).toMatch(/^To: ada@story\.test$/m);
    // a bounced message takes neither action
    expect(await page.locator('p.actions').count()).toBe(0);
    if (shots) await page.screenshot({ path: path.join(shots, 'operator-message.png'), fullPage: true });

    const api = await asAdmin(ctx.api).get(`/admin/api/messages/${ids.story}`);
    expect(api.status).toBe(200);
    expect(api.body.steps.map((s: { what: string }) => s.what)).toEqual(what);
    expect(api.body.attempts.map((a: { attempt: number; outcome: string }) => [a.attempt, a.outcome])).toEqual([
      [1, 'deferred'],
      [2, 'sent'],
    ]);
    expect(api.body.events[1].deliveries).toHaveLength(2);
  });

  it('retries a deferred and a failed message, cancels a queued one, with the same rules in the admin API', async () => {
    await go(`/admin/messages/${ids.deferred}`);
    expect(await page.locator('#message-status').innerText()).toMatch(/^deferred/);
    await page.click('button:has-text("Retry now")');
    expect(await flash()).toMatch(/retried/);
    const deferredJob = await queue(QUEUE.delivery).getJob(jobId.delivery(ids.deferred));
    expect(await deferredJob!.getState()).toBe('waiting');

    await go(`/admin/messages/${ids.failed}`);
    expect(await page.locator('button:has-text("Cancel")').count()).toBe(0);
    await page.click('button:has-text("Retry now")');
    expect(await page.locator('#message-status').innerText()).toMatch(/^queued/);
    expect((await db().message.findUniqueOrThrow({ where: { id: ids.failed } })).status).toBe('queued');
    expect(await (await queue(QUEUE.delivery).getJob(jobId.delivery(ids.failed)))!.getState()).toBe('waiting');

    await go(`/admin/messages/${ids.queued}`);
    expect(await page.locator('button:has-text("Retry now")').count()).toBe(0);
    await page.click('button:has-text("Cancel")');
    expect(await flash()).toMatch(/cancelled/);
    expect(await page.locator('#message-status').innerText()).toMatch(/^cancelled/);

    await go(`/admin/messages/${ids.sent}`);
    expect(await page.locator('p.actions').count()).toBe(0);

    const admin = () => asAdmin(ctx.api);
    const sentBefore = await db().message.findUniqueOrThrow({ where: { id: ids.sent } });
    expect((await admin().post(`/admin/api/messages/${ids.sent}/cancel`)).status).toBe(409);
    expect((await admin().post(`/admin/api/messages/${ids.sent}/retry`)).status).toBe(409);
    expect(await db().message.findUniqueOrThrow({ where: { id: ids.sent } })).toEqual(sentBefore);
    // a claimed message may be on the wire: no cancel
    await db().message.update({ where: { id: ids.failed }, data: { status: 'sending', lockedUntil: new Date(Date.now() + 30_000) } });
    const claimed = await admin().post(`/admin/api/messages/${ids.failed}/cancel`);
    expect(claimed.status).toBe(409);
    expect(claimed.body.error).toMatch(/being sent now/);
    expect((await admin().post(`/admin/api/messages/${ids.queued}/cancel`)).status).toBe(409);
    const unknown = await admin().post('/admin/api/messages/0190a0a0-0000-7000-8000-000000000000/retry');
    expect(unknown.status).toBe(404);
    expect((await admin().post('/admin/api/messages/not-a-uuid/cancel')).body).toEqual({ ok: false, error: 'id must be a message id (a UUID)' });
    const search = await admin().get('/admin/api/messages/search').query({ q: 'defer.test', status: 'deferred', limit: 5 });
    expect(search.status).toBe(200);
    expect(search.body.kind).toBe('domain');
    expect(search.body.messages).toHaveLength(5);
    expect(search.body.messages.every((m: { to: string; status: string }) => m.to.endsWith('@defer.test') && m.status === 'deferred')).toBe(true);
  });

  it('offers the same search, story and prospects in the CLI', async () => {
    const cli = async (...args: string[]) => {
      const run = runTs('scripts/admin.ts', args);
      expect(await run.exited).toBe(0);
      return JSON.parse(run.stdout()) as Record<string, unknown>;
    };
    const [found, story, prospects] = await Promise.all([
      cli('messages', 'search', '--q', 'defer.test', '--status', 'deferred', '--limit', '3'),
      cli('message', 'show', ids.story),
      cli('prospects', String(ids.campaign), '--status', 'replied', '--limit', '5'),
    ]);
    expect(found.kind).toBe('domain');
    expect((found.messages as { to: string; status: string }[]).map((m) => [m.to.endsWith('@defer.test'), m.status])).toEqual(Array(3).fill([true, 'deferred']));
    expect((story.steps as { what: string }[]).map((s) => s.what)).toEqual(['accepted', 'attempt 1', 'attempt 2', 'opened', 'clicked', 'bounced']);
    expect((prospects.prospects as { status: string }[]).map((p) => p.status)).toEqual(Array(5).fill('replied'));
  });

  it("lists a campaign's prospects, filtered and paged", async () => {
    await go(`/admin/campaigns/${ids.campaign}`);
    const table = page.locator('table.prospects tbody tr');
    expect(await table.count()).toBe(50);
    await page.selectOption('#prospects select[name=status]', 'replied');
    await page.click('#prospects button:has-text("Filter")');
    const rows = await table.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(rows).toHaveLength(36);
    expect(rows.every((r) => r[4] === 'replied' && /^Sounds good, send me the draft \d+/.test(r[7]!))).toBe(true);
    await go(`/admin/campaigns/${ids.campaign}?status=later`);
    const later = await table.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(later.every((r) => r[4] === 'later' && r[6] !== '-')).toBe(true);
    // all 180, each once, through the "Older prospects" links
    await go(`/admin/campaigns/${ids.campaign}`);
    if (shots) {
      await page.locator('#prospects').scrollIntoViewIfNeeded();
      await page.evaluate(() => (globalThis as unknown as { scrollBy(x: number, y: number): void }).scrollBy(0, -20));
      await page.screenshot({ path: path.join(shots, 'operator-prospects.png') });
    }
    const seen = new Set<string>();
    for (;;) {
      for (const id of await table.locator('td:first-child').allInnerTexts()) seen.add(id);
      const older = page.locator('a:has-text("Older prospects")');
      if (!(await older.count())) break;
      await older.click();
    }
    expect(seen.size).toBe(180);
  });

  it('draws the charts for a range: hourly under three days, daily above, labels never overlapping, the numbers in a table', async () => {
    await go('/admin');
    await page.selectOption('form.range select[name=range]', '24h');
    await page.click('form.range button:has-text("Show")');
    expect(new URL(page.url()).searchParams.get('range')).toBe('24h');
    const first = page.locator('#charts svg.chart').first();
    expect(await first.locator('title').textContent()).toBe('Emails accepted and delivered, all accounts');
    expect(await first.locator('g.series polyline').first().getAttribute('points').then((p) => p!.split(' ').length)).toBe(24);
    expect(await overlappingLabels(page)).toEqual([]);
    await page.locator('#charts details summary').first().click();
    expect(await page.locator('#charts details table th').first().innerText()).toBe('Hour (UTC)');
    // the table says what the chart draws: the hours' accepted messages add up to the messages of the last 24 hours
    const accepted = await page.locator('#charts details table').first().locator('tr td:nth-child(2)').allInnerTexts();
    const [{ n }] = (await rawQuery<{ n: number }>(db(), `SELECT count(*)::int AS n FROM messages WHERE created_at >= date_trunc('hour', now()) - interval '23 hours'`)) as [{ n: number }];
    expect(accepted.reduce((s, v) => s + Number(v), 0)).toBe(n);
    if (shots) await page.locator('#charts').screenshot({ path: path.join(shots, 'operator-charts-hourly.png') });

    const today = new Date().toISOString().slice(0, 10);
    const twoDaysAgo = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await go(`/admin?range=custom&from=${twoDaysAgo}&to=${today}`);
    expect(await page.locator('#charts svg.chart g.series polyline').first().getAttribute('points').then((p) => p!.split(' ').length)).toBe(48);
    expect(await overlappingLabels(page)).toEqual([]);
    for (const range of ['7d', '30d', '90d']) {
      await go(`/admin?range=${range}`);
      expect(await page.locator('#charts svg.chart g.series polyline').first().getAttribute('points').then((p) => p!.split(' ').length)).toBe(Number(range.slice(0, -1)));
      expect(await overlappingLabels(page)).toEqual([]);
    }
    await go(`/admin/campaigns/${ids.campaign}?range=24h`);
    expect(await overlappingLabels(page)).toEqual([]);
    expect((await go('/admin?range=custom&from=2026-01-02'))!.status()).toBe(400);
  });

  it("shows a running broadcast's last half hour, minute by minute", async () => {
    const res = await go(`/admin/broadcasts/${ids.broadcast}`);
    expect(res!.headers().refresh).toBe('10');
    const live = page.locator('#live svg.chart');
    expect(await live.locator('title').textContent()).toBe('This broadcast, minute by minute');
    expect(await live.locator('g.series').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-series')))).toEqual(['delivered', 'bounced', 'failed', 'opened']);
    expect(await page.locator('#live').innerText()).toMatch(/\d+ copies delivered in the last minute · 2\d\d delivered, \d+ bounced/);
    expect(await overlappingLabels(page)).toEqual([]);
    if (shots) await page.locator('#live').screenshot({ path: path.join(shots, 'operator-live.png') });
    await page.goto('about:blank'); // before its Refresh reloads it
  });

  it('opens the queue dashboard on the console session, without a second sign-in; a stranger is asked for the token', async () => {
    const res = await go('/admin/queues');
    expect(res!.status()).toBe(200);
    expect(await res!.text()).toMatch(/mailservice queues/);
    await page.goto('about:blank');
    // another browser context has no console cookie
    const stranger = await view.browser.newContext();
    try {
      const refused = await stranger.request.get(`${base}/admin/queues`);
      expect(refused.status()).toBe(401);
      expect(refused.headers()['www-authenticate']).toMatch(/^Basic/);
    } finally {
      await stranger.close();
    }
  });

  it('states the import box limit, and offers the file upload for more', async () => {
    const list = await db().list.findFirstOrThrow({ where: { accountId: ids.account } });
    await go(`/admin/lists/${list.id}`);
    const paste = page.locator('form[action$="/import"]');
    expect(await paste.innerText()).toMatch(/Up to 256 KB pasted here/);
    expect(await paste.locator('a[href="#upload"]').count()).toBe(1);
    expect(await page.locator('form#upload input[type=file]').count()).toBe(1);
    // 10,000 lines, over the limit: the refusal says the console's real limit and leads to the upload
    const lines = Array.from({ length: 10_000 }, (_, i) => `someone.with.a.long.name${i}@example.org,Someone ${i}`).join('\n');
    // (typed in by the test: fill() of half a megabyte outlasts its timeout on a busy host)
    await paste.locator('textarea').evaluate((t, value) => ((t as unknown as { value: string }).value = value), lines);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/import')), paste.locator('button').click()]);
    expect(answer.status()).toBe(413);
    expect(await page.locator('.error').innerText()).toBe("The form is over the console's limit of 256 KB. Import a file of that size instead: the file upload takes up to 100 MB.");
    await page.click('a:has-text("Back")');
    expect(new URL(page.url()).hash).toBe('#upload');
    expect(await db().import.count({ where: { listId: list.id } })).toBe(0);
  });
});
