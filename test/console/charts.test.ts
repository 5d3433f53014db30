import path from 'node:path';
import type { Page } from 'playwright-core';
import { db, rawQuery } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from './browser';

/**
 * The console's charts in a real browser (Debian's chromium through playwright-core, as console.test.ts): server-drawn
 * SVG under the console's strict CSP (no script, no inline style), each line told apart without colour, the numbers
 * in a table beside each chart. CONSOLE_SCREENSHOT=1 writes docs/analytics.png.
 */
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const problems: string[] = [];

const DAY_MS = 86_400_000;
const dayAgo = (n: number) => new Date(Date.now() - n * DAY_MS).toISOString().slice(0, 10);

const view = useConsoleBrowser(ctx, {
  signIn: true,
  viewport: { width: 1200, height: 900 },
  // a CSP violation, or anything the page complains of, fails the file
  context: async (context) => {
    context.on('console', (m) => {
      // a failed load is reported by its response below, with its address (the browser's own /favicon.ico is a 404)
      if ((m.type() === 'error' || m.type() === 'warning') && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
    });
    context.on('response', (r) => {
      if (r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico') problems.push(`${r.status()} ${r.url()}`);
    });
    context.on('weberror', (e) => problems.push(e.error().message));
  },
});
beforeAll(() => ({ base, page } = view));

afterEach(() => {
  expect(problems).toEqual([]);
});

let ids: { mailbox: number; campaign: number; broadcast: number };

beforeAll(async () => {
  const tenant = await makeTenant();
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { name: 'Spring outreach' });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const listRow = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  const broadcast = await db().broadcast.create({
    data: { accountId: tenant.account.id, listId: listRow.id, subject: 'November news', text: 'x', status: 'sent', audience: 120 },
  });
  ids = { mailbox: tenant.mailbox.id, campaign: campaign.id, broadcast: broadcast.id };
  // thirty days of counters: transactional mail every day, the broadcast's day, the campaign's replies
  const rows: unknown[][] = [];
  for (let n = 29; n >= 0; n--) {
    rows.push([tenant.account.id, tenant.mailbox.id, 0, 0, dayAgo(n), 40 + ((n * 7) % 23), 38 + ((n * 7) % 23), n % 5 === 0 ? 2 : 0, n % 7 === 0 ? 1 : 0, 0, n % 4 === 0 ? 1 : 0, 0, 3 + (n % 6), 0]);
    if (n % 3 === 0) rows.push([tenant.account.id, tenant.mailbox.id, campaign.id, 0, dayAgo(n), 10, 9, 1, 0, 0, 0, n % 2, 0, 0]);
  }
  rows.push([tenant.account.id, tenant.mailbox.id, 0, broadcast.id, dayAgo(2), 118, 112, 4, 2, 1, 3, 0, 27, 0]);
  for (const r of rows) {
    await rawQuery(
      db(),
      `INSERT INTO daily_counts (account_id, mailbox_id, campaign_id, broadcast_id, day, sent, delivered, bounced_dead, bounced_other, complained, unsubscribed, replied, clicked, opened)
       VALUES ($1, $2, $3, $4, $5::date, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      r,
    );
  }
});

/** Each chart's series: how its line is dashed and which marker it carries, told apart without colour. */
async function seriesLooks(chart: ReturnType<Page['locator']>) {
  return chart.locator('g.series').evaluateAll((groups) =>
    groups.map((g) => ({
      key: g.getAttribute('data-series'),
      dash: g.querySelector('polyline')?.getAttribute('stroke-dasharray') ?? 'solid',
      marker: g.querySelector('polyline + *')?.getAttribute('class') ?? '',
      points: (g.querySelector('polyline')?.getAttribute('points') ?? '').split(' ').length,
    })),
  );
}

describe('charts in the console', () => {
  it('draws the last 30 days on the overview, under the strict CSP, each line told apart without colour', async () => {
    const res = await page.goto(`${base}/admin`);
    const csp = res!.headers()['content-security-policy']!;
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    const charts = page.locator('#charts svg[role=img]');
    expect(await charts.count()).toBe(3);
    expect(await page.locator('#charts svg script').count()).toBe(0);
    expect(await page.locator('#charts [style]').count()).toBe(0);
    const first = charts.nth(0);
    expect(await first.locator('title').textContent()).toBe('Emails sent and delivered, all accounts');
    const looks = await seriesLooks(first);
    expect(looks.map((l) => l.key)).toEqual(['sent', 'delivered']);
    expect(looks.every((l) => l.points === 30)).toBe(true);
    const trouble = await seriesLooks(charts.nth(1));
    expect(trouble.map((l) => l.key)).toEqual(['bounced_dead', 'bounced_other', 'complained', 'unsubscribed']);
    // no two lines of a chart look alike in black and white: dash pattern and marker shape differ
    for (const chart of [looks, trouble]) {
      expect(new Set(chart.map((l) => l.dash)).size).toBe(chart.length);
      expect(new Set(chart.map((l) => l.marker)).size).toBe(chart.length);
    }
    // the chart is really drawn: it has a size on the page
    const box = await first.boundingBox();
    expect(box!.width).toBeGreaterThan(400);
    expect(box!.height).toBeGreaterThan(100);
    // the legend carries the totals of the range, and the numbers are in a table too
    const sent = await rawQuery<{ n: number }>(db(), `SELECT sum(sent)::int AS n FROM daily_counts WHERE day >= $1::date`, [dayAgo(29)]);
    expect(await first.locator('text', { hasText: `Sent ${sent[0]!.n}` }).count()).toBe(1);
    if (process.env.CONSOLE_SCREENSHOT) await page.locator('#charts').screenshot({ path: path.join(__dirname, '../../docs/analytics.png') });
    await page.locator('#charts details summary').first().click();
    expect(await page.locator('#charts details table').first().locator('tr').count()).toBe(31);
  });

  it("draws a mailbox's, a campaign's and a broadcast's charts, with the broadcast's funnel", async () => {
    await page.goto(`${base}/admin/mailboxes`);
    await page.click(`a[href="/admin/mailboxes/${ids.mailbox}"]`);
    expect(await page.locator('#charts svg[role=img]').count()).toBe(3);
    expect(await page.locator('#charts svg title').first().textContent()).toBe('Emails sent and delivered, this mailbox');

    await page.goto(`${base}/admin/campaigns/${ids.campaign}`);
    expect(await page.locator('h1').innerText()).toBe('Campaign Spring outreach');
    const replies = page.locator('#charts svg').nth(2);
    expect(await replies.locator('title').textContent()).toBe('Replies, Clicks, this campaign');
    expect(await replies.locator('text', { hasText: 'Replies 5' }).count()).toBe(1);

    await page.goto(`${base}/admin/broadcasts/${ids.broadcast}`);
    const funnel = page.locator('#funnel svg[role=img]');
    expect(await funnel.locator('title').textContent()).toBe('The funnel of this broadcast');
    const steps = await funnel.locator('g.step').evaluateAll((gs) => gs.map((g) => [...g.querySelectorAll('text')].map((t) => t.textContent)));
    expect(steps).toEqual([
      ['Audience', '120'],
      ['Sent', '118 (98.3%)'],
      ['Delivered', '112 (93.3%)'],
      ['Bounced', '6 (5.0%)'],
      ['Unsubscribed', '3 (2.5%)'],
      ['Clicked', '27 (22.5%)'],
      ['Opened', '0 (0.0%)'],
    ]);
    // the bars are drawn to scale
    const widths = await funnel.locator('g.step rect:nth-of-type(2)').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('width'))));
    expect(widths[1]! / widths[0]!).toBeCloseTo(118 / 120, 2);
    expect(await page.locator('#charts svg[role=img]').count()).toBe(3);
    if (process.env.CONSOLE_SCREENSHOT) await page.locator('#funnel').screenshot({ path: path.join(__dirname, '../../docs/analytics-funnel.png') });
  });

  it('answers 404 for a mailbox that does not exist', async () => {
    const res = await page.goto(`${base}/admin/mailboxes/999999`);
    expect(res!.status()).toBe(404);
    problems.length = 0; // the 404 is what was asked for
  });
});
