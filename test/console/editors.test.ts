import path from 'node:path';
import type { Page } from 'playwright-core';
import { db, rawQuery } from '../../apps/core/src/db';
import { getCampaign } from '../../apps/core/src/outreach/campaigns';
import { getList } from '../../apps/core/src/subscribers/lists';
import { useApi } from '../helpers/api';
import { signedInWithoutScript } from './browser';
import { DOCS_SHOTS, useSeededConsole, type Seeded } from './seed';

/**
 * The console's structured editors, driven in chromium as an operator would, each checked by what was stored: the
 * welcome series (steps with a delay and a template of the account), a campaign's steps (add, reorder, remove), the
 * segment builder with its live count (a script of the console's own origin) and its Count button without JavaScript,
 * composing with a template (variables asked for, the preview rendered), and the overview's default range.
 * CONSOLE_SCREENSHOT=1 writes the editors' pictures of docs/operator.md.
 */
jest.setTimeout(240_000);

const ctx = useApi();
// a CSP violation or a script error fails the file
const consoleView = useSeededConsole(ctx);
const view = consoleView.view;
let page: Page;
let base: string;
let seeded: Seeded;
const shots = DOCS_SHOTS;

beforeAll(() => ({ page, base, seeded } = consoleView));

const flash = () => page.locator('.flash').innerText();
/** The editor's fieldset of a step, by its legend (`Step 2`, `New step`). */
const step = (legend: string) => page.locator('fieldset.step', { has: page.locator('legend', { hasText: new RegExp(`^${legend}$`) }) });

describe('the welcome series editor', () => {
  it('adds a step of a template and one of its own, reorders and removes them, and refuses a step without a body', async () => {
    await page.goto(`${base}/admin/lists/${seeded.list}`);
    expect(await page.locator('#series textarea[name=steps]').count()).toBe(0);
    await step('New step').locator('select').selectOption(String(seeded.template));
    await step('New step').locator('input[type=number][name$=delay_hours]').fill('0');
    await page.click('button:has-text("Save the series")');
    expect(await flash()).toContain('the series has 1 step.');

    await step('New step').locator('input[name$=".subject"]').fill('Two days in, {{name}}');
    await step('New step').locator('textarea[name$=".html"]').fill('<p>Still with us?</p>');
    await step('New step').locator('input[name$=delay_hours]').fill('48');
    await page.click('button:has-text("Save the series")');
    expect(await flash()).toContain('the series has 2 steps.');
    let list = await getList(db(), seeded.list);
    expect(list.steps.map((s) => [s.template, s.subject, s.delay_hours])).toEqual([
      [seeded.template, '', 0],
      [null, 'Two days in, {{name}}', 48],
    ]);

    // the own step first: positions swapped
    await step('Step 1').locator('input.position').fill('2');
    await step('Step 2').locator('input.position').fill('1');
    await page.click('button:has-text("Save the series")');
    list = await getList(db(), seeded.list);
    expect(list.steps.map((s) => s.template)).toEqual([null, seeded.template]);
    expect(await step('Step 1').locator('input[name$=".subject"]').inputValue()).toBe('Two days in, {{name}}');
    if (shots) await page.locator('#series').screenshot({ path: path.join(shots, 'operator-series.png') });

    // a step with a subject and no body: 400 naming it, the series as it was
    await step('New step').locator('input[name$=".subject"]').fill('No body');
    await step('New step').locator('input[name$=delay_hours]').fill('1');
    const refused = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/series')), page.click('button:has-text("Save the series")')]);
    expect(refused[0].status()).toBe(400);
    expect(await page.locator('.error').innerText()).toMatch(/html or text/);
    expect((await getList(db(), seeded.list)).steps).toHaveLength(2);

    await page.goto(`${base}/admin/lists/${seeded.list}`);
    await step('Step 1').locator('input[name$=".remove"]').check();
    await page.click('button:has-text("Save the series")');
    expect(await flash()).toContain('the series has 1 step.');
    expect((await getList(db(), seeded.list)).steps.map((s) => s.template)).toEqual([seeded.template]);
  });
});

describe("a campaign's steps editor", () => {
  it('adds a step, reorders and removes steps, and keeps at least one', async () => {
    await page.goto(`${base}/admin/campaigns/${seeded.campaign}`);
    const before = await getCampaign(db(), seeded.campaign);
    await step('New step').locator('input[name$=".subject"]').fill('A last word');
    await step('New step').locator('textarea[name$=".body"]').fill('Last note, {{name}}.');
    await step('New step').locator('input[name$=delay_hours]').fill('72');
    await step('New step').locator('input.position').fill('1');
    await page.click('button:has-text("Save the steps")');
    expect(await flash()).toContain(`Steps of "${before.name}" saved: ${before.steps.length + 1}.`);
    let campaign = await getCampaign(db(), seeded.campaign);
    expect(campaign.steps.map((s) => ('subject' in s ? s.subject : ''))).toEqual(['A last word', ...before.steps.map((s) => ('subject' in s ? s.subject : ''))]);
    expect(campaign.steps[0]).toMatchObject({ body: 'Last note, {{name}}.', delay_hours: 72 });

    await step('Step 1').locator('input[name$=".remove"]').check();
    await page.click('button:has-text("Save the steps")');
    campaign = await getCampaign(db(), seeded.campaign);
    expect(campaign.steps.map((s) => ('subject' in s ? s.subject : ''))).toEqual(before.steps.map((s) => ('subject' in s ? s.subject : '')));

    // every step removed: refused, the steps as they were
    for (let n = 1; n <= campaign.steps.length; n++) await step(`Step ${n}`).locator('input[name$=".remove"]').check();
    await page.click('button:has-text("Save the steps")');
    expect(await page.locator('.error').innerText()).toMatch(/at least one step/);
    expect((await getCampaign(db(), seeded.campaign)).steps).toHaveLength(before.steps.length);
  });
});

describe('the segment builder and composing with a template', () => {
  // the seed's readers 0 to 11: the odd ones tagged vip, plan "pro" unless n is a multiple of 3: 1, 5, 7 and 11
  const VIP_PRO = 4;
  /** Waits until the live count's line holds `words` (a locator: the page's CSP allows no evaluated script). */
  const countSays = (words: string) => page.locator('#audience-count', { hasText: words }).waitFor({ timeout: 20_000 });

  it('counts the segment live as it is typed, then stores it with the draft', async () => {
    const answer = await page.goto(`${base}/admin/broadcasts`);
    expect(answer!.headers()['content-security-policy']).toMatch(/script-src 'self'; connect-src 'self'/);
    expect(answer!.headers()['content-security-policy']).not.toMatch(/unsafe-inline/);
    await page.selectOption('select[name=list]', seeded.listKey);
    await page.fill('input[name=tags]', 'vip');
    await page.fill('input[name="field0.name"]', 'plan');
    await page.fill('input[name="field0.value"]', 'pro');
    await countSays(`This audience is ${VIP_PRO} people now.`);
    // a field no subscriber has: the live count says the refusal
    await page.fill('input[name="field1.name"]', 'planet');
    await page.fill('input[name="field1.value"]', 'mars');
    await countSays('"planet"');
    await page.fill('input[name="field1.name"]', '');
    await page.fill('input[name="field1.value"]', '');
    await countSays(`This audience is ${VIP_PRO} people now.`);

    if (shots) await page.locator('#segment-builder').screenshot({ path: path.join(shots, 'operator-segment.png') });
    await page.fill('input[name=subject]', 'For the pro readers');
    await page.fill('textarea[name=text]', 'Hello {{name}}');
    await page.click('button:has-text("Save draft")');
    expect(await flash()).toMatch(/saved as a draft/);
    const id = Number(new URL(page.url()).pathname.split('/').at(-1));
    const stored = await db().broadcast.findUniqueOrThrow({ where: { id } });
    expect(stored.tags).toEqual(['vip']);
    expect(stored.segment).toEqual({ fields: { plan: 'pro' } });
  });

  it('counts with the Count button when the browser runs no script, keeping the form as typed', async () => {
    const { page: bare, close } = await signedInWithoutScript(view, { width: 390, height: 900 });
    try {
      await bare.goto(`${base}/admin/broadcasts`);
      await bare.selectOption('select[name=list]', seeded.listKey);
      await bare.fill('input[name=tags]', 'vip');
      await bare.fill('input[name="field0.name"]', 'plan');
      await bare.fill('input[name="field0.value"]', 'pro, free');
      await bare.fill('input[name=subscribed_after]', '2000-01-01');
      await bare.click('#count-audience');
      expect(await bare.locator('#audience-count').innerText()).toBe(`This audience of list ${seeded.listKey} is 6 people now.`);
      expect(await bare.locator('input[name=tags]').inputValue()).toBe('vip');
      expect(await bare.locator('input[name="field0.value"]').inputValue()).toBe('pro, free');
      expect(await bare.locator('input[name=subscribed_after]').inputValue()).toBe('2000-01-01');
    } finally {
      await close();
    }
  });

  it('asks for the variables of the template picked, previews it through the one renderer, and saves the draft with the template', async () => {
    await page.goto(`${base}/admin/broadcasts`);
    await page.selectOption('select[name=list]', seeded.listKey);
    await page.selectOption('select[name=template]', String(seeded.template));
    await page.click('#compose-preview');
    // the seed's template reads {{name}} (required) and {{plan}}: asked for, and the preview waits for the required one
    expect(await page.locator('#preview-error').innerText()).toMatch(/name/);
    expect(await page.locator('#variables input').evaluateAll((inputs) => inputs.map((i) => i.getAttribute('name')))).toEqual(['var.name', 'var.plan']);
    await page.fill('input[name="var.name"]', 'Ann <b>');
    await page.fill('input[name="var.plan"]', 'gold');
    await page.click('#compose-preview');
    expect(await page.locator('#preview-subject').innerText()).toBe('Welcome, Ann <b>');
    expect(await page.locator('#preview-html').innerText()).toContain('<p>Hello Ann &lt;b&gt;, your plan is gold.</p>');
    expect(await page.locator('#compose-preview-shown b').count()).toBe(0);
    if (shots) await page.screenshot({ path: path.join(shots, 'operator-compose.png'), fullPage: true });
    expect(await page.locator('select[name=template]').inputValue()).toBe(String(seeded.template));
    await page.click('button:has-text("Save draft")');
    expect(await flash()).toMatch(/saved as a draft/);
    const id = Number(new URL(page.url()).pathname.split('/').at(-1));
    expect((await db().broadcast.findUniqueOrThrow({ where: { id } })).templateId).toBe(seeded.template);
  });

  it('previews its own content for a sample reader', async () => {
    await page.goto(`${base}/admin/broadcasts`);
    await page.fill('input[name=subject]', 'Hi {{name}}');
    await page.fill('textarea[name=html]', '<p>For {{email}}</p>');
    await page.click('#compose-preview');
    expect(await page.locator('#preview-subject').innerText()).toBe('Hi Reader');
    expect(await page.locator('#preview-html').innerText()).toBe('<p>For reader@example.com</p>');
    expect(await page.locator('#variables').count()).toBe(0);
  });
});

describe('copying long values', () => {
  it("copies a DKIM value with its button (a script of the console's origin), and shows no button without JavaScript", async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const answer = await page.goto(`${base}/admin/domains/${seeded.domain}`);
    expect(answer!.headers()['content-security-policy']).toMatch(/script-src 'self'/);
    const value = page.locator('tr.record[data-purpose=dkim] code.value').first();
    const button = page.locator('tr.record[data-purpose=dkim] code.value + button.copy-button').first();
    await button.click();
    await page.locator('button.copy-button', { hasText: 'Copied' }).waitFor();
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toBe(await value.textContent());
    expect(copied).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}/);

    const { page: bare, close } = await signedInWithoutScript(view);
    try {
      await bare.goto(`${base}/admin/domains/${seeded.domain}`);
      expect(await bare.locator('code.value').count()).toBeGreaterThan(0);
      expect(await bare.locator('button.copy-button').count()).toBe(0);
    } finally {
      await close();
    }
  });
});

describe("the overview's default range", () => {
  it('is the last 7 days hour by hour while the service has under 14 days of counters, else the last 30 days', async () => {
    await page.goto(`${base}/admin`);
    const points = () => page.locator('#charts svg.chart g.series polyline').first().getAttribute('points').then((p) => p!.split(' ').length);
    expect(await page.locator('form.range select[name=range]').inputValue()).toBe('168h');
    expect(await points()).toBe(168);
    // over seven days the axis shows some hours only: each with its day
    expect(await page.locator('#charts svg.chart').first().locator('text.axis-x').allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^\d\d-\d\d \d\d:00$/)]));
    const chart = await page.locator('#charts svg.chart').first().boundingBox();
    const main = await page.locator('main').boundingBox();
    expect(chart!.width).toBeGreaterThan(main!.width * 0.9);

    await rawQuery(db(), `INSERT INTO daily_counts (account_id, mailbox_id, day, sent, delivered) VALUES ($1, $2, current_date - 20, 5, 5)`, [seeded.account, seeded.mailbox]);
    await page.goto(`${base}/admin`);
    expect(await page.locator('form.range select[name=range]').inputValue()).toBe('30d');
    expect(await points()).toBe(30);
  });
});
