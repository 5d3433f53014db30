import os from 'node:os';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeCampaign } from '../helpers/factories';
import { signedInWithoutScript } from './browser';
import { checkPage } from './page-check';
import { DOCS_SHOTS, useSeededConsole } from './seed';

/**
 * A campaign's steps editor for every shape the admin API takes (docs/outreach.md: branches and A/B tests), driven in
 * chromium and checked by what was stored: a sequence built in the form is stored exactly as the same steps sent to
 * PATCH /admin/api/campaigns/{id}; a campaign's page saved unchanged keeps its steps; a refused form changes nothing and
 * says why in the editor's words; it saves without JavaScript; the page fits at 1366 and 390 px, axe-core clean.
 * CONSOLE_SCREENSHOT=1 writes docs/operator-steps.png.
 */
jest.setTimeout(300_000);

const ctx = useApi();
const consoleView = useSeededConsole(ctx);
let page: Page;
let base: string;
beforeAll(() => {
  ({ page, base } = consoleView);
  page.setDefaultTimeout(15_000);
});

interface Step {
  id?: string;
  type?: 'email' | 'condition';
  subject?: string;
  body?: string;
  template?: number;
  delay_hours?: number;
  next?: string;
  variants?: { subject: string; body: string; weight?: number }[];
  winner?: { metric: string; after_hours: number; min_sample: number };
  if?: string;
  within_hours?: number;
  then?: string;
  else?: string;
}

/** Every shape of step: an email of its own, a condition, an A/B test with a winner rule and `next`, a template, a numbered step with a template and a subject. */
const sequence = (template: number): Step[] => [
  { id: 'intro', subject: 'Hello {{name}}', body: 'A first note.\nOn two lines.', delay_hours: 0 },
  { id: 'ask', type: 'condition', if: 'not_replied', within_hours: 48, then: 'test', else: 'thanks' },
  {
    id: 'test',
    delay_hours: 24.5,
    next: 'last',
    variants: [
      { subject: 'Short', body: 'Short body', weight: 2 },
      { subject: 'Long', body: 'A longer body' },
      { subject: 'Third', body: 'Third body', weight: 0.5 },
    ],
    winner: { metric: 'replies', after_hours: 72, min_sample: 20 },
  },
  { id: 'thanks', template, delay_hours: 1 },
  { id: 'last', subject: 'Last word', body: 'Bye, {{name}}.', delay_hours: 96 },
  { type: 'email', subject: 'A sixth', template, delay_hours: 2 },
];

/** The campaign's steps as stored, without their row ids. */
const stored = async (campaign: number) =>
  (await db().campaignStep.findMany({ where: { campaignId: campaign }, orderBy: { position: 'asc' } })).map(({ id: _id, campaignId: _campaign, ...step }) => step);

/** Every part of every step opened (in the page: the test's TypeScript knows no DOM). */
const openAll = () => page.evaluate(`document.querySelectorAll('details.kind').forEach((d) => { d.open = true; })`);
const flash = () => page.locator('.flash').innerText();
const save = () => Promise.all([page.waitForResponse((r) => /\/steps$/.test(r.url()) && r.request().method() === 'POST'), page.click('button:has-text("Save the steps")')]).then(([answer]) => answer.status());

/** A part of a step's row (a <details>, by its summary) opened, as a person clicks it open; left open when it is. */
const opened = (row: Locator, part: string) => row.locator('details', { has: page.locator('summary', { hasText: part }) }).evaluate((d) => ((d as unknown as { open: boolean }).open = true));

/** Fills the editor's row `i` with `step`, opening the parts of its kind as a person would. */
async function fillStep(i: number, step: Step): Promise<void> {
  const row = page.locator('fieldset.step').nth(i);
  const set = (name: string, value: string | number) => page.fill(`[name="step${i}.${name}"]`, String(value));
  const open = (part: string) => opened(row, part);
  if (step.id) await set('id', step.id);
  const kind = step.type === 'condition' ? 'condition' : step.variants ? 'ab' : 'email';
  await page.selectOption(`[name="step${i}.kind"]`, kind);
  if (kind === 'condition') {
    await open('Condition');
    await page.selectOption(`[name="step${i}.if"]`, step.if!);
    await set('within_hours', step.within_hours!);
    await set('then', step.then!);
    return set('else', step.else!);
  }
  await set('delay_hours', step.delay_hours!);
  if (step.next) await set('next', step.next);
  if (kind === 'email') {
    await open('Email');
    if (step.template) await page.selectOption(`[name="step${i}.template"]`, String(step.template));
    if (step.subject) await set('subject', step.subject);
    if (step.body) await set('body', step.body);
    return;
  }
  await open('A/B test');
  for (const [n, v] of step.variants!.entries()) {
    const letter = 'abcdefghij'[n]!;
    await set(`${letter}_subject`, v.subject);
    await set(`${letter}_body`, v.body);
    if (v.weight !== undefined) await set(`${letter}_weight`, v.weight);
  }
  if (step.winner) {
    await page.selectOption(`[name="step${i}.metric"]`, step.winner.metric);
    await set('after_hours', step.winner.after_hours);
    await set('min_sample', step.winner.min_sample);
  }
}

describe("a campaign's steps editor with branches and A/B tests", () => {
  let byApi: number;
  let byForm: number;

  it('stores a sequence built in the form exactly as the admin API stores the same steps', async () => {
    const { seeded } = consoleView;
    const steps = sequence(seeded.template);
    byApi = (await makeCampaign(seeded.account, seeded.mailbox, { name: 'By the API', steps: [{ subject: 'x', body: 'x', delay_hours: 0 }] })).id;
    byForm = (await makeCampaign(seeded.account, seeded.mailbox, { name: 'By the form', steps: [{ subject: 'old', body: 'old', delay_hours: 0 }] })).id;
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${byApi}`).send({ steps }).expect(200);

    await page.goto(`${base}/admin/campaigns/${byForm}?blank=${steps.length}#steps`);
    expect(await page.locator('#steps textarea[name=steps]').count()).toBe(0);
    await page.locator('[name="step0.remove"]').check();
    for (const [n, step] of steps.entries()) await fillStep(n + 1, step);
    expect(await save()).toBe(303);
    expect(await flash()).toContain(`Steps of "By the form" saved: ${steps.length}.`);
    expect(await stored(byForm)).toEqual(await stored(byApi));
    expect((await stored(byForm)).map((s) => s.key)).toEqual(['intro', 'ask', 'test', 'thanks', 'last', '6']);

    // shown as the sequence and saved again unchanged: the same steps
    expect(await page.locator('table.sequence-tree').innerText()).toMatch(/ask.*if not_replied/);
    const before = await stored(byApi);
    await page.goto(`${base}/admin/campaigns/${byApi}`);
    expect(await page.locator('[name="step2.c_subject"]').inputValue()).toBe('Third');
    expect(await page.locator('[name="step1.kind"]').inputValue()).toBe('condition');
    expect(await save()).toBe(303);
    expect(await stored(byApi)).toEqual(before);
    if (DOCS_SHOTS) await page.locator('#steps').screenshot({ path: path.join(DOCS_SHOTS, 'operator-steps.png') });
  });

  it('creates a campaign from the new campaign form exactly as POST /admin/api/campaigns does, and refuses a bad one', async () => {
    const { seeded } = consoleView;
    const steps = sequence(seeded.template);
    const created = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: seeded.account, name: 'Created by the API', goal: 'links', mailbox: seeded.mailbox, steps }).expect(201);
    const fill = async (name: string, rows: Step[]) => {
      await page.goto(`${base}/admin/campaigns?blank=${rows.length}#new-campaign`);
      await page.selectOption('#new-campaign select[name=account]', String(seeded.account));
      await page.fill('#new-campaign input[name=name]', name);
      await page.selectOption('#new-campaign select[name=mailbox]', String(seeded.mailbox));
      for (const [n, step] of rows.entries()) await fillStep(n, step);
      return Promise.all([page.waitForResponse((r) => r.url().endsWith('/admin/campaigns') && r.request().method() === 'POST'), page.click('button:has-text("Create campaign")')]).then(([answer]) => answer.status());
    };
    expect(await fill('Created by the form', steps)).toBe(303);
    const made = await db().campaign.findFirstOrThrow({ where: { name: 'Created by the form' } });
    expect(await stored(made.id)).toEqual(await stored(created.body.campaign.id));

    // a condition first: refused by the domain's rule, in the form's words, and no campaign made
    const count = await db().campaign.count();
    expect(await fill('Refused', [steps[1]!, steps[0]!, steps[2]!, steps[3]!, steps[4]!])).toBe(400);
    expect(await page.locator('.error').innerText()).toMatch(/the first step must be an email/);
    expect(await db().campaign.count()).toBe(count);
  });

  it('changes a variant, a branch and the order, and removes a variant', async () => {
    await page.goto(`${base}/admin/campaigns/${byForm}`);
    await opened(page.locator('fieldset.step').nth(2), 'A/B test');
    await page.fill('[name="step2.b_subject"]', '');
    await page.fill('[name="step2.b_body"]', '');
    await page.fill('[name="step2.a_weight"]', '3');
    await opened(page.locator('fieldset.step').nth(1), 'Condition');
    await page.fill('[name="step1.then"]', 'last');
    // the numbered step to the top: its id follows its new position
    await page.fill('[name="step5.position"]', '1');
    expect(await save()).toBe(303);
    const steps = await stored(byForm);
    expect(steps.map((s) => s.key)).toEqual(['1', 'intro', 'ask', 'test', 'thanks', 'last']);
    expect(steps[2]!.condition).toEqual({ if: 'not_replied', within_hours: 48, then: 'last', else: 'thanks' });
    expect(steps[3]!.variants).toEqual([
      { subject: 'Short', body: 'Short body', weight: 3 },
      { subject: 'Third', body: 'Third body', weight: 0.5 },
    ]);
  });

  it('refuses a branch to no step, a variant without a subject and weights of 0, in the editor’s words, changing nothing', async () => {
    const before = await stored(byForm);
    const refused = async (change: () => Promise<unknown>, error: RegExp) => {
      await page.goto(`${base}/admin/campaigns/${byForm}`);
      await openAll();
      await change();
      expect(await save()).toBe(400);
      expect(await page.locator('.error').innerText()).toMatch(error);
      expect(await stored(byForm)).toEqual(before);
    };
    await refused(() => page.fill('[name="step2.else"]', 'nowhere'), /"ask" else names "nowhere", which is not a step of the campaign/);
    await refused(() => page.fill('[name="step3.a_subject"]', ''), /^step 4, variant A: subject is required/);
    await refused(async () => {
      await page.fill('[name="step3.a_weight"]', '0');
      await page.fill('[name="step3.b_weight"]', '0');
    }, /^step 4: /);
    await refused(() => page.selectOption('[name="step3.metric"]', ''), /^step 4: winner.metric is required/);
    await refused(() => page.fill('[name="step2.id"]', ''), /^step 3: id is required/);
  });

  it('saves without JavaScript', async () => {
    const plain = await signedInWithoutScript(consoleView.view);
    try {
      await plain.page.goto(`${base}/admin/campaigns/${byForm}`);
      // an email step's own part is open as the page comes
      await plain.page.fill('[name="step5.subject"]', 'Last word, changed');
      await plain.page.click('button:has-text("Save the steps")');
      expect(await plain.page.locator('.flash').innerText()).toContain('saved: 6.');
    } finally {
      await plain.close();
    }
    expect((await stored(byForm))[5]).toMatchObject({ key: 'last', subject: 'Last word, changed', body: 'Bye, {{name}}.' });
  });

  it('fits at 1366 and 390 px with no axe-core A/AA violation, its tables as cards on the phone', async () => {
    await page.goto(`${base}/admin/campaigns/${byApi}`);
    await openAll();
    const folder = path.join(os.tmpdir(), 'console-steps-editor');
    const findings = [...(await checkPage(page, 'campaign', 1366, path.join(folder, 'campaign-1366.png'))), ...(await checkPage(page, 'campaign', 390, path.join(folder, 'campaign-390.png')))];
    expect(findings).toEqual([]);
    // on the phone a row of the sequence is a card of "label: value" lines
    const cell = `document.querySelector('table.sequence-tree tbody td:nth-child(2)')`;
    expect(await page.evaluate(`${cell}.getAttribute('data-label')`)).toBe('Sent');
    expect(await page.evaluate(`getComputedStyle(${cell}).display`)).toBe('block');
    await page.setViewportSize({ width: 1366, height: 900 });
    expect(await page.evaluate(`getComputedStyle(${cell}).display`)).toBe('table-cell');
  });
});
