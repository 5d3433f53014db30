import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { preferencesToken } from '../../apps/core/src/subscriber-links/preferences';
import { LINK_REQUESTS_PER_CLIENT } from '../../apps/core/src/subscribers/limit';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { useConsoleBrowser } from '../console/browser';
import { address, confirmationMessages, tokenOfStored } from '../lists/support';
import { makeList, makeTenant } from '../helpers/factories';

/**
 * The preference centre in a real browser (Debian's chromium through playwright-core) and on the wire
 * (docs/preferences.md): the hosted form offers the public topics, the signed page changes topics, pause and name and
 * leaves the list, each step in the consent ledger in order; a link altered or of another subscriber changes nothing;
 * "send me my link" answers the same whatever the address and mails only a subscriber, rate-limited per network.
 */
const sink = useMail({ queues: ['delivery'] });
const ctx = useApi();
const browser = useConsoleBrowser(ctx);

const TOPICS = [
  { id: 'news', name: 'News', description: 'What is new', default: 'in', public: true },
  { id: 'offers', name: 'Offers', default: 'out', public: true },
  { id: 'staff', name: 'Staff notes', default: 'out', public: false },
];

async function topicList(options: { confirm?: boolean } = {}) {
  const tenant = await makeTenant({ smtp: sink.url });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: options.confirm ?? true, name: 'Garden Club' });
  expect((await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).send({ topics: TOPICS })).status).toBe(200);
  return { tenant, list };
}

const subscriberOf = (listId: number, email: string) => db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId, email } } });
const ledger = async (id: number) => (await asAdmin(ctx.api).get(`/admin/api/subscribers/${id}/consent`)).body.consent as { kind: string; source: string; form_text: string; detail: Record<string, unknown> }[];

describe('the preference centre in a browser', () => {
  it('joins through the form with its public topics, then changes topics, pause and name and leaves, every step in the ledger in order', async () => {
    const { list } = await topicList();
    const email = address('browser');
    const { page, base } = browser;

    await page.goto(`${base}/f/${list.key}`);
    expect(await page.isChecked('input[name=topic][value=news]')).toBe(true);
    expect(await page.isChecked('input[name=topic][value=offers]')).toBe(false);
    expect(await page.locator('input[name=topic][value=staff]').count()).toBe(0);
    await page.fill('#email', email);
    await page.fill('#name', 'Ada');
    await page.check('input[name=topic][value=offers]');
    await page.click('button[type=submit]');
    await page.waitForSelector('text=Check your inbox');
    expect((await subscriberOf(list.id, email)).topics).toEqual({ news: true, offers: true });

    const [message] = await confirmationMessages(email);
    await page.goto(`${base}/confirm/${tokenOfStored(message!)}`);
    await page.click('button:has-text("Confirm subscription")');
    await page.waitForSelector('text=you are subscribed');

    const subscriber = await subscriberOf(list.id, email);
    await page.goto(`${base}/preferences/${preferencesToken(subscriber.id)}`);
    expect(await page.textContent('h1')).toBe('Your emails from Garden Club');
    expect(await page.isChecked('input[name=topic][value=news]')).toBe(true);
    expect(await page.isChecked('input[name=topic][value=offers]')).toBe(true);
    expect(await page.locator('input[name=topic][value=staff]').count()).toBe(0);
    await page.uncheck('input[name=topic][value=news]');
    await page.check('input[name=pause][value="30"]');
    await page.fill('#name', 'Ada L.');
    await page.click('#save');
    await page.waitForSelector('#status');
    expect(await page.textContent('#status')).toBe('Your choices are saved.');
    expect(await page.textContent('#paused')).toMatch(/^Emails are paused until \d{4}-\d{2}-\d{2}\.$/);
    expect(await page.isChecked('input[name=topic][value=news]')).toBe(false);

    const saved = await subscriberOf(list.id, email);
    expect(saved).toMatchObject({ status: 'active', name: 'Ada L.', topics: { news: false, offers: true } });
    const days = (saved.pausedUntil!.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    // resuming, then leaving
    await page.check('input[name=pause][value=resume]');
    await page.click('#save');
    await page.waitForSelector('#status');
    expect(await page.locator('#paused').count()).toBe(0);
    await page.click('#leave');
    await page.waitForSelector('text=You left the list');
    expect((await subscriberOf(list.id, email)).status).toBe('unsubscribed');
    await page.goto(`${base}/preferences/${preferencesToken(subscriber.id)}`);
    expect(await page.textContent('#status')).toContain('You are not subscribed');

    const steps = await ledger(subscriber.id);
    expect(steps.map((s) => `${s.kind}/${s.source}`)).toEqual([
      'subscribe/form',
      'confirm/form',
      'topics/preference_page',
      'name/preference_page',
      'pause/preference_page',
      'pause/preference_page',
      'unsubscribe/preference_page',
    ]);
    expect(steps[0]!.form_text).toContain('Topics: News, Offers.');
    expect(steps[0]!.detail).toMatchObject({ status: 'pending', topics: { news: true, offers: true } });
    expect(steps[2]!.detail).toEqual({ changed: { news: false } });
    expect(steps[2]!.form_text).toContain('[x] News; [x] Offers');
    expect(steps[3]!.detail).toEqual({ name: 'Ada L.' });
    expect(steps[4]!.detail).toMatchObject({ days: 30 });
    expect(steps[5]!.detail).toEqual({ until: null });
  }, 60_000);
});

describe('the preference page refuses what is not its own', () => {
  it('answers 404 for an altered link or one with another subscriber\'s id, and changes nothing', async () => {
    const { list } = await topicList({ confirm: false });
    const [a, b] = [address('a'), address('b')];
    await db().subscriber.createMany({ data: [a, b].map((email) => ({ listId: list.id, email, status: 'active' as const })) });
    const [sa, sb] = [await subscriberOf(list.id, a), await subscriberOf(list.id, b)];
    const token = preferencesToken(sa.id);
    const mac = token.split('.')[1]!;
    const altered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [altered, `${sb.id}.${mac}`, `${sa.id}`, 'x']) {
      expect((await request(ctx.api.app).get(`/preferences/${bad}`)).status).toBe(404);
      const posted = await request(ctx.api.app).post(`/preferences/${bad}`).type('form').send({ action: 'leave' });
      expect(posted.status).toBe(404);
      expect((await request(ctx.api.app).post(`/preferences/${bad}`).type('form').send({ action: 'save', name: 'Mallory', pause: '90' })).status).toBe(404);
    }
    for (const s of [sa, sb]) expect(await subscriberOf(list.id, s.email)).toMatchObject({ status: 'active', name: '', pausedUntil: null, topics: {} });
    expect(await db().consentEvent.count({ where: { subscriberId: { in: [sa.id, sb.id] } } })).toBe(0);
  });

  it('refuses a topic of another list with 400 and saves nothing of the form', async () => {
    const { list } = await topicList({ confirm: false });
    const email = address('c');
    await db().subscriber.create({ data: { listId: list.id, email, status: 'active' } });
    const s = await subscriberOf(list.id, email);
    const res = await request(ctx.api.app)
      .post(`/preferences/${preferencesToken(s.id)}`)
      .type('form')
      .send('action=save&topics_shown=1&topic=news&topic=elsewhere&name=Changed&pause=30');
    expect(res.status).toBe(400);
    expect(res.text).toContain('the list has no topic &quot;elsewhere&quot;');
    expect(await subscriberOf(list.id, email)).toMatchObject({ name: '', pausedUntil: null, topics: {} });
    expect(await db().consentEvent.count({ where: { subscriberId: s.id } })).toBe(0);
    const badPause = await request(ctx.api.app).post(`/preferences/${preferencesToken(s.id)}`).type('form').send('action=save&pause=7');
    expect(badPause.status).toBe(400);
  });
});

describe('send me my link', () => {
  it('answers the same for a subscriber and a stranger, and mails the link only to the subscriber', async () => {
    const { list } = await topicList({ confirm: false });
    const member = address('member');
    await db().subscriber.create({ data: { listId: list.id, email: member, status: 'active' } });
    const s = await subscriberOf(list.id, member);
    const form = await request(ctx.api.app).get(`/preferences/list/${list.key}`);
    expect(form.status).toBe(200);
    expect(form.text).toContain('Send me my link');
    const known = await request(ctx.api.app).post(`/preferences/list/${list.key}`).type('form').send({ email: member });
    const stranger = address('stranger');
    const unknown = await request(ctx.api.app).post(`/preferences/list/${list.key}`).type('form').send({ email: stranger });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(unknown.text).toBe(known.text);
    const mail = await waitFor(() => sink.to(member)[0], { timeout: 15_000, what: 'the preference link email' });
    const link = `http://mail.test/preferences/${preferencesToken(s.id)}`;
    expect(mail.parsed.subject).toBe('Your link to choose what you receive from Garden Club');
    expect(mail.parsed.text).toContain(link);
    expect(mail.parsed.html).toContain(`href="${link}"`);
    // the stored email holds no usable link
    expect(JSON.stringify(await db().message.findMany({ where: { to: member } }))).not.toContain(preferencesToken(s.id));
    expect(await db().message.count({ where: { to: stranger } })).toBe(0);
    expect((await request(ctx.api.app).get(`/preferences/list/nope-${list.key}`)).status).toBe(404);
  });

  it('is rate-limited per network: past the window\'s share a post answers 429 and sends nothing', async () => {
    const { list } = await topicList({ confirm: false });
    const member = address('limited');
    await db().subscriber.create({ data: { listId: list.id, email: member, status: 'active' } });
    let refused: request.Response | undefined;
    for (let i = 0; i <= LINK_REQUESTS_PER_CLIENT && !refused; i++) {
      const res = await request(ctx.api.app).post(`/preferences/list/${list.key}`).type('form').send({ email: address('someone') });
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(200);
    }
    expect(refused?.status).toBe(429);
    expect(refused!.headers['retry-after']).toEqual(expect.any(String));
    expect((await request(ctx.api.app).post(`/preferences/list/${list.key}`).type('form').send({ email: member })).status).toBe(429);
    expect(await db().message.count({ where: { to: member } })).toBe(0);
  });
});

describe('the access log', () => {
  it('keeps no preference token, and no unsubscribe token of a per-topic link', async () => {
    const { redactedUrl } = await import('../../apps/api/src/middleware/request');
    expect(redactedUrl('/preferences/7.abcdef')).toBe('/preferences/[redacted]');
    expect(redactedUrl('/Preferences//7.abcdef?x=1')).toBe('/Preferences//[redacted]?x=1');
    expect(redactedUrl('/u/7.abcdef/t/news')).toBe('/u/[redacted]');
  });
});

describe('the embedded form', () => {
  it("offers the list's public topics, and a post of it keeps the person's choices", async () => {
    const { list } = await topicList();
    const { embedSnippet, subscribeFormPage } = await import('../../apps/core/src/subscribers/html');
    const snippet = embedSnippet(`http://mail.test/f/${list.key}`, TOPICS.filter((t) => t.public) as never);
    expect(snippet).toContain('<input type="checkbox" name="topic" value="news" checked> News</label>');
    expect(snippet).toContain('<input type="checkbox" name="topic" value="offers"> Offers</label>');
    expect(snippet).not.toContain('staff');
    expect(subscribeFormPage('x')).not.toContain('topics_shown');
    const email = address('embedded');
    // as a browser posts the snippet with only "offers" ticked
    const res = await request(ctx.api.app).post(`/f/${list.key}`).type('form').send(`email=${encodeURIComponent(email)}&topics_shown=1&topic=offers&website=`);
    expect(res.status).toBe(200);
    expect((await subscriberOf(list.id, email)).topics).toEqual({ news: false, offers: true });
  });
});
