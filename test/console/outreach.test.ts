import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from './browser';

/**
 * The console's outreach settings and numbers (docs/outreach.md), in a real browser through the forms: a campaign's
 * window, auto-pause, opt-out and stats, a mailbox's pacing and warm-up.
 */
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

const flash = () => page.locator('.flash').innerText();

describe('outreach in the console', () => {
  it("sets a campaign's window, auto-pause and opt-out, shows the reason of an auto-pause and the campaign's numbers", async () => {
    const tenant = await makeTenant();
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { status: 'running', steps: [{ subject: 'a', body: 'a', delay_hours: 0 }] });
    await db().campaign.update({ where: { id: campaign.id }, data: { status: 'paused', pausedReason: 'bounce rate 7.0% over the last 100 emails' } });
    const prospect = await db().prospect.create({ data: { campaignId: campaign.id, email: 'ann@x.org', status: 'replied', step: 1, reply: 'human', repliedAt: new Date() } });
    const id = crypto.randomUUID();
    await db().message.create({ data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'sequence', prospectId: prospect.id, step: 1, to: 'ann@x.org', subject: 'a', messageIdHeader: `<${id}@x.org>`, status: 'sent', sentAt: new Date() } });

    await page.goto(`${base}/admin/campaigns/${campaign.id}`);
    expect(await page.locator('p.error').innerText()).toMatch(/Paused by the service: bounce rate 7\.0% over the last 100 emails/);
    expect(await page.content()).toContain('any time');
    expect(await page.locator('text=Reply rate').innerText()).toMatch(/Reply rate 100\.0%/);
    expect(await page.locator('table.stats-steps tbody tr').first().innerText()).toMatch(/^1\s+1\s+0\s+1\s+0\s+0$/);
    expect(await page.locator('table.stats-days tbody tr').first().innerText()).toMatch(/\d{4}-\d\d-\d\d\s+1\s+1\s+0/);

    await page.fill('input[name=timezone]', 'America/New_York');
    await page.fill('input[name=days]', '1,2,3,4,5');
    await page.fill('input[name=from]', '09:00');
    await page.fill('input[name=to]', '17:30');
    await page.fill('input[name=bounce_rate]', '0.08');
    await page.fill('input[name=window]', '200');
    await page.uncheck('input[name=unsubscribe]');
    await page.click('button:has-text("Save sending settings")');
    expect(await flash()).toMatch(/Sending settings of .* saved/);
    const saved = await db().campaign.findUniqueOrThrow({ where: { id: campaign.id } });
    expect(saved.schedule).toEqual({ timezone: 'America/New_York', days: [1, 2, 3, 4, 5], from: '09:00', to: '17:30' });
    expect(saved.pauseOn).toEqual({ bounce_rate: 0.08, complaint_rate: 0.003, window: 200 });
    expect(saved.unsubscribe).toBe(false);
    expect(await page.content()).toContain('Mon Tue Wed Thu Fri 09:00-17:30 (America/New_York');

    // a bad zone is refused, naming the field, and nothing changes
    await page.fill('input[name=timezone]', 'Mars/Olympus');
    await page.click('button:has-text("Save sending settings")');
    expect(await page.content()).toMatch(/timezone must be an IANA time zone/);
    expect((await db().campaign.findUniqueOrThrow({ where: { id: campaign.id } })).schedule).toEqual(saved.schedule);
  });

  it("sets a mailbox's gap jitter and warm-up and shows today's cap", async () => {
    const tenant = await makeTenant({ mailbox: { daily_limit: 40 } });
    await page.goto(`${base}/admin/mailboxes`);
    await page.selectOption('select[name=mailbox]', String(tenant.mailbox.id));
    await page.fill('input[name=gap_jitter]', '0.5');
    await page.fill('input[name=warmup_start]', '10');
    await page.fill('input[name=warmup_step]', '5');
    await page.click('button:has-text("Save pacing")');
    expect(await flash()).toMatch(/jitter 0\.5, today's cap 10/);
    expect(await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).toMatchObject({ gapJitter: 0.5, warmupStart: 10, warmupStep: 5 });
    expect(await page.locator('td', { hasText: 'warm-up 10 +5/day' }).count()).toBe(1);
  });
});
