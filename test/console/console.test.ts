import path from 'node:path';
import request from 'supertest';
import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { runBroadcast } from '../../apps/core/src/broadcasts/run';
import { DeliveryQueue } from '../../apps/core/src/delivery/outbox';
import { emitEvent } from '../../apps/core/src/events';
import { runImport } from '../../apps/core/src/imports';
import { makeKey, makeList } from '../helpers/factories';
import { SmtpSink } from '../helpers/smtp-sink';
import { useConsoleBrowser } from './browser';
import { waitFor } from '../helpers/wait';

/**
 * The admin console in a real browser (Debian's chromium driven by playwright-core): every step goes through the forms.
 * Any request to a host other than this loopback server fails the test.
 */
// a browser on a busy 2-core machine: steps of a few seconds each
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const external: string[] = [];
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const view = useConsoleBrowser(ctx, {
  // anything not loopback is noted (and never leaves the machine)
  context: (context) =>
    context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.protocol !== 'data:' && !LOOPBACK.has(url.hostname)) {
        external.push(route.request().url());
        return route.abort();
      }
      return route.continue();
    }),
});
beforeAll(() => ({ base, page } = view));

afterEach(() => {
  expect(external).toEqual([]);
});

const flash = () => page.locator('.flash').innerText();
const go = (p: string) => page.goto(base + p);

describe('the admin console', () => {
  let token = '';

  it('asks for the admin token and signs in into an HttpOnly SameSite=Strict cookie', async () => {
    await go('/admin');
    expect(new URL(page.url()).pathname).toBe('/admin/signin');
    await page.fill('input[name=token]', 'wrong-token-0123456789');
    await page.click('button:has-text("Sign in")');
    expect(await page.locator('.error').innerText()).toMatch(/not the admin token/);
    await page.fill('input[name=token]', ADMIN_TOKEN);
    await page.click('button:has-text("Sign in")');
    expect(await flash()).toBe('Signed in.');
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'ms_console', httpOnly: true, sameSite: 'Strict', path: '/admin' });
    const res = await page.request.get(`${base}/admin`);
    expect(res.headers()['content-security-policy']).toMatch(/default-src 'none'/);
    expect(res.headers()['content-security-policy']).not.toMatch(/script-src|unsafe-inline/);
    expect(await res.text()).not.toMatch(/<script/i);
  });

  it('creates an account and a mailbox through the forms', async () => {
    await go('/admin/accounts');
    await page.fill('input[name=name]', 'Acme <b>Ltd</b>');
    await page.click('button:has-text("Create account")');
    expect(await flash()).toMatch(/^Account \d+ "Acme <b>Ltd<\/b>" created\.$/);
    // escaped, not markup
    expect(await page.locator('td', { hasText: 'Acme <b>Ltd</b>' }).count()).toBe(1);

    await go('/admin/mailboxes');
    await page.fill('input[name=address]', 'hello@acme.test');
    await page.fill('input[name=smtp]', 'smtp://user:secret@127.0.0.1:2525');
    await page.click('button:has-text("Create mailbox")');
    expect(await flash()).toMatch(/Mailbox \d+ hello@acme.test created/);
    expect(await page.content()).not.toContain('secret');

    // "test connection": nothing listens on that port; then a real SMTP server that asks for the login
    await page.click('button:has-text("Test SMTP")');
    expect(await flash()).toMatch(/^SMTP failed for hello@acme\.test: 127\.0\.0\.1:2525: .*ECONNREFUSED/);
    const sink = await new SmtpSink({ user: 'user', pass: 'secret' }).start();
    try {
      await go('/admin/mailboxes');
      await page.fill('input[name=address]', 'sink@acme.test');
      await page.fill('input[name=smtp]', sink.url);
      await page.click('button:has-text("Create mailbox")');
      await page.locator('tr', { hasText: 'sink@acme.test' }).locator('button:has-text("Test SMTP")').click();
      expect(await flash()).toMatch(/^SMTP works for sink@acme\.test: .* accepted the connection and the login$/);
    } finally {
      await sink.stop();
    }
  });

  it('creates a key, shows its token once, and revokes it', async () => {
    await go('/admin/keys');
    await page.fill('input[name=name]', 'website');
    await page.click('button:has-text("Create key")');
    token = await page.locator('#new-token').innerText();
    expect(token).toMatch(/^msk_/);
    const lists = await request(ctx.api.app).get('/api/v1/lists').set('Authorization', `Bearer ${token}`);
    expect(lists.status).toBe(200);

    await go('/admin/keys');
    expect(await page.content()).not.toContain(token);
    await page.click('button:has-text("Revoke")');
    expect(await flash()).toMatch(/Key \d+ "website" revoked/);
    const refused = await request(ctx.api.app).get('/api/v1/lists').set('Authorization', `Bearer ${token}`);
    expect(refused.status).toBe(401);
  });

  it('creates a list and a campaign, starts and pauses the campaign', async () => {
    await go('/admin/lists');
    await page.fill('input[name=name]', 'Newsletter');
    await page.click('button:has-text("Create list")');
    expect(await flash()).toMatch(/List \d+ "Newsletter" created/);
    const list = await db().list.findFirstOrThrow({ where: { name: 'Newsletter' } });

    // thousands of rows are paged, filtered and exported
    await db().subscriber.createMany({
      data: Array.from({ length: 1200 }, (_, i) => ({ listId: list.id, email: `reader${String(i).padStart(4, '0')}@example.org`, name: i === 7 ? '=HYPERLINK("x")' : `Reader ${i}`, status: i % 3 ? 'active' : 'pending' })),
    });
    await go(`/admin/lists/${list.id}`);
    expect(await page.locator('tbody tr').count()).toBe(50);
    await page.click('a[rel=next]');
    expect(await page.locator('tbody tr').first().innerText()).toMatch(/reader0050@example\.org/);
    await page.fill('input[name=q]', 'reader011');
    await page.selectOption('select[name=status]', 'pending');
    await page.click('button:has-text("Filter")');
    // reader0110..0119, every third pending: 0111, 0114, 0117
    expect(await page.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual(['reader0111@example.org', 'reader0114@example.org', 'reader0117@example.org']);
    const csv = await page.request.get(`${base}/admin/lists/${list.id}/subscribers.csv`);
    expect(csv.status()).toBe(200);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines).toHaveLength(1201);
    expect(lines[0]).toBe('email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at');
    expect(lines[8]).toMatch(/^reader0007@example\.org,"'=HYPERLINK\(""x""\)",active,/);

    await go('/admin/campaigns');
    await page.fill('input[name=name]', 'Outreach');
    await page.selectOption('select[name=goal]', 'links');
    await page.fill('input[name="step0.subject"]', 'Hello {{name}}');
    await page.fill('textarea[name="step0.body"]', 'A short note.');
    await page.fill('input[name="step0.delay_hours"]', '0');
    await page.click('button:has-text("Create campaign")');
    expect(await flash()).toMatch(/Campaign \d+ "Outreach" created \(draft\)/);
    await page.click('button:has-text("Start")');
    expect(await flash()).toMatch(/"Outreach" is running/);
    await page.click('button:has-text("Pause")');
    expect(await flash()).toMatch(/"Outreach" is paused/);
    expect((await db().campaign.findFirstOrThrow({ where: { name: 'Outreach' } })).status).toBe('paused');
    await page.click('a:has-text("Outreach")');
    expect(await page.locator('h1').innerText()).toBe('Campaign Outreach');
    expect(await page.locator('tbody tr').first().innerText()).toMatch(/1\s+0\s+Hello \{\{name\}\}\s+A short note\./);
    await page.click('button:has-text("Resume")');
    expect(await flash()).toMatch(/"Outreach" is running/);
  });

  it('finds a message by its recipient', async () => {
    const mailbox = await db().mailbox.findFirstOrThrow({ where: { address: 'hello@acme.test' } });
    const { token: sender } = await makeKey(mailbox.accountId, mailbox.id);
    for (const to of ['someone@example.test', 'other@example.test']) {
      const sent = await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${sender}`).send({ to, subject: `For ${to}`, text: 'hi' });
      expect(sent.status).toBe(202);
    }
    await go('/admin/messages');
    await page.fill('input[name=q]', 'someone@example.test');
    await page.click('button:has-text("Find")');
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toMatch(/someone@example\.test\s+For someone@example\.test\s+queued/);
    if (process.env.CONSOLE_SCREENSHOT) {
      await go('/admin/campaigns');
      await page.setViewportSize({ width: 1200, height: 760 });
      await page.screenshot({ path: path.join(__dirname, '../../docs/console.png') });
    }
  });

  it('imports subscribers from CSV on a list page: an import job whose page follows the progress', async () => {
    const list = await db().list.findFirstOrThrow({ where: { name: 'Newsletter' } });
    await go(`/admin/lists/${list.id}`);
    expect(await page.locator('#form-url').innerText()).toBe(`${process.env.PUBLIC_URL}/f/${list.key}`);
    expect(await page.locator('#embed-snippet').inputValue()).toContain(`<form method="post" action="${process.env.PUBLIC_URL}/f/${list.key}">`);
    await page.fill('textarea[name=csv]', 'New.One@Example.org,"One, New"\nnot-an-address\nreader0001@example.org,Again\n');
    await page.check('form[action$="/import"] input[name=confirmed]');
    await page.click('button:has-text("Import")');
    expect(await flash()).toMatch(/^Import \d+: 3 lines stored\.$/);
    const imported = await db().import.findFirstOrThrow({ where: { listId: list.id }, orderBy: { id: 'desc' } });
    expect(page.url()).toBe(`${base}/admin/imports/${imported.id}`);
    expect(await page.locator('#import-status').innerText()).toMatch(/queued, 0 of 3 lines/);
    // the worker's part, in this process; the page, reloaded as its Refresh header asks, shows the outcome. The page
    // is left first: a reload of its own, due while the import runs on a busy host, would abort the next goto
    await page.goto('about:blank');
    await runImport(db(), imported.id);
    await go(`/admin/imports/${imported.id}`);
    expect(await page.locator('#import-status').innerText()).toBe(`Import ${imported.id}: done, 3 of 3 lines (100%)`);
    expect(await page.locator('tbody tr', { hasText: 'not-an-address' }).innerText()).toMatch(/^3\s+not an email address: "not-an-address"$/);
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: list.id, email: 'new.one@example.org' } } })).toMatchObject({ name: 'One, New', status: 'active' });

    // a file from the computer, streamed (multipart) into an import
    await go(`/admin/lists/${list.id}`);
    const lines = ['email,name,tags', ...Array.from({ length: 3_000 }, (_, i) => `file${i}@example.org,File ${i},from-file`)].join('\r\n');
    await page.setInputFiles('input[name=file]', { name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(lines) });
    await page.check('form[action$="/upload"] input[name=confirmed]');
    await page.click('button:has-text("Upload")');
    expect(await flash()).toMatch(/^Import \d+: 3000 lines stored\.$/);
    const uploaded = await db().import.findFirstOrThrow({ where: { listId: list.id }, orderBy: { id: 'desc' } });
    await page.goto('about:blank');
    await runImport(db(), uploaded.id);
    await go(`/admin/imports/${uploaded.id}`);
    expect(await page.locator('#import-status').innerText()).toBe(`Import ${uploaded.id}: done, 3000 of 3000 lines (100%)`);
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: list.id, email: 'file2999@example.org' } } })).toMatchObject({ name: 'File 2999', tags: ['from-file'], status: 'active' });
  });

  it('refuses a file upload without the CSRF token, storing nothing', async () => {
    const list = await db().list.findFirstOrThrow({ where: { name: 'Newsletter' } });
    const cookies = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const before = await db().import.count();
    const res = await request(base).post(`/admin/lists/${list.id}/upload`).set('Cookie', cookies).attach('file', Buffer.from('email\nx@example.org\n'), 'x.csv');
    expect(res.status).toBe(403);
    expect(res.text).toContain('CSRF token missing or wrong');
    expect(await db().import.count()).toBe(before);
  });

  it('creates a webhook, shows its secret once, rotates it, lists its deliveries, disables and deletes it', async () => {
    await go('/admin/webhooks');
    await page.fill('input[name=url]', 'http://127.0.0.1:9/hooks');
    await page.check('input[name=events][value="message.sent"]');
    await page.check('input[name=events][value="message.failed"]');
    await page.click('button:has-text("Create webhook")');
    const secret = await page.locator('#new-secret').innerText();
    expect(secret).toMatch(/^whsec_/);
    const row = page.locator('tr', { hasText: 'http://127.0.0.1:9/hooks' });
    expect(await row.innerText()).toMatch(/message\.sent, message\.failed\s+enabled/);
    await go('/admin/webhooks');
    expect(await page.content()).not.toContain(secret);

    await row.locator('button:has-text("Rotate secret")').click();
    const rotated = await page.locator('#new-secret').innerText();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);

    const webhook = await db().webhook.findFirstOrThrow({ where: { url: 'http://127.0.0.1:9/hooks' } });
    await db().$transaction((tx) => emitEvent(tx, webhook.accountId, 'message.sent', { id: 'x' }));
    const event = await db().event.findFirstOrThrow({ where: { accountId: webhook.accountId, type: 'message.sent' }, orderBy: { createdAt: 'desc' } });
    await db().webhookDelivery.create({ data: { webhookId: webhook.id, eventId: event.id, type: 'message.sent', attempt: 1, statusCode: 502, error: 'HTTP 502' } });
    await go('/admin/webhooks');
    await page.click('a:has-text("http://127.0.0.1:9/hooks")');
    expect(await page.locator('tbody tr').first().innerText()).toMatch(new RegExp(`${event.id}\\s+message\\.sent\\s+1\\s+502\\s+HTTP 502`));

    await go('/admin/webhooks');
    await row.locator('button:has-text("Disable")').click();
    expect(await flash()).toBe(`Webhook ${webhook.id} is disabled.`);
    await row.locator('button:has-text("Delete")').click();
    expect(await flash()).toBe(`Webhook ${webhook.id} deleted.`);
    expect(await db().webhook.count({ where: { id: webhook.id } })).toBe(0);
  });

  it('composes a broadcast, previews it with the html escaped, sends, pauses and cancels it with its progress shown', async () => {
    const mailbox = await db().mailbox.findFirstOrThrow({ where: { address: 'hello@acme.test' } });
    const list = await makeList(mailbox.accountId, mailbox.id, { name: 'Announcements', confirm: false });
    await db().subscriber.create({ data: { listId: list.id, email: 'fan@example.org', name: 'Fan', status: 'active' } });
    await go('/admin/broadcasts');
    await page.selectOption('select[name=list]', list.key);
    await page.fill('input[name=subject]', 'News for {{name}}');
    await page.fill('textarea[name=html]', '<p>Hello {{name}}, <b>big</b> news. <a href="{{unsubscribe_url}}">Leave</a></p>');
    await page.click('button:has-text("Save draft")');
    expect(await flash()).toMatch(/^Broadcast \d+ saved as a draft\.$/);
    expect(await page.locator('#preview-subject').innerText()).toBe('News for Reader');
    // the html is shown as its source: no element of it reaches the page
    expect(await page.locator('#preview-html').innerText()).toContain('<b>big</b>');
    expect(await page.locator('#preview-html b').count()).toBe(0);
    expect(await page.locator('#preview-html').innerText()).toContain('/u/(each-copy-has-its-own)');

    await page.click('button:has-text("Send")');
    expect(await flash()).toMatch(/is sending\.$/);
    const broadcast = await db().broadcast.findFirstOrThrow({ where: { listId: list.id } });
    // the worker's part, in this process: the copy is written and queued (no SMTP worker here, so it stays pending
    // and the run waits for it until the pause below)
    const run = runBroadcast(db(), new DeliveryQueue(), broadcast.id, { pollMs: 20 });
    await waitFor(async () => ((await db().message.count({ where: { broadcastId: broadcast.id } })) === 1 ? true : undefined), { what: 'the copy' });
    await go(`/admin/broadcasts/${broadcast.id}`);
    expect(await page.locator('#progress').innerText()).toMatch(/^1 in the audience · 0 sent · 0 failed · 0 skipped · 1 pending/);
    await page.click('button:has-text("Pause")');
    expect(await flash()).toBe(`Broadcast ${broadcast.id} is paused.`);
    expect(await page.locator('#progress').innerText()).toMatch(/· 0 pending/);
    expect(await run).toBe('stopped');
    await page.click('button:has-text("Cancel")');
    expect(await flash()).toBe(`Broadcast ${broadcast.id} is cancelled.`);
    expect(await page.locator('form button').allInnerTexts()).not.toContain('Send');
    await go('/admin/broadcasts');
    expect(await page.locator('tr', { hasText: 'News for {{name}}' }).innerText()).toMatch(/cancelled/);
  });

  it('shows the inbound readers and the emails they handled, escaped', async () => {
    const mailbox = await db().mailbox.findFirstOrThrow({ where: { address: 'hello@acme.test' } });
    await db().inboundMessage.create({ data: { mailboxId: mailbox.id, uidValidity: 1n, uid: 7n, kind: 'reply', fromAddress: 'ann@reader.test', subject: 'Re: <i>hello</i>' } });
    await go('/admin/inbound');
    expect(await page.locator('tr', { hasText: 'ann@reader.test' }).innerText()).toMatch(/hello@acme\.test\s+ann@reader\.test\s+Re: <i>hello<\/i>\s+reply/);
    expect(await page.locator('tr', { hasText: 'hello@acme.test' }).first().innerText()).toMatch(/not set\s+off/);
    await page.selectOption('select[name=mailbox]', String(mailbox.id));
    await page.click('button:has-text("Filter")');
    expect(await page.locator('tr', { hasText: 'ann@reader.test' }).count()).toBe(1);

    // a report that proved no message of ours is shown as unmatched, and can be listed alone
    await db().inboundMessage.create({ data: { mailboxId: mailbox.id, uidValidity: 1n, uid: 8n, kind: 'bounce', reason: 'userunknown', fromAddress: 'mailer-daemon@stranger.test', subject: 'Undelivered', unmatched: 'names no Message-ID of ours' } });
    await go('/admin/inbound');
    expect(await page.locator('tr', { hasText: 'mailer-daemon@stranger.test' }).innerText()).toMatch(/bounce \(userunknown\)\s+unmatched, not applied: names no Message-ID of ours/);
    await page.check('input[name=unmatched]');
    await page.click('button:has-text("Filter")');
    expect(await page.locator('tr', { hasText: 'mailer-daemon@stranger.test' }).count()).toBe(1);
    expect(await page.locator('tr', { hasText: 'ann@reader.test' }).count()).toBe(0);
  });

  it('refuses a POST without the CSRF token, and changes nothing', async () => {
    const before = await db().account.count();
    const res = await page.request.post(`${base}/admin/accounts`, { form: { name: 'forged' } });
    expect(res.status()).toBe(403);
    expect(await res.text()).toMatch(/CSRF token missing or wrong/);
    const wrong = await page.request.post(`${base}/admin/accounts`, { form: { name: 'forged', _csrf: 'guess' } });
    expect(wrong.status()).toBe(403);
    expect(await db().account.count()).toBe(before);
  });

  it('renders the API reference at /docs from the service alone', async () => {
    await go('/docs');
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    expect(await page.locator('.opblock').count()).toBe(17);
    expect(await page.locator('.opblock-summary-path', { hasText: '/prospects/state' }).count()).toBe(1);
    if (process.env.CONSOLE_SCREENSHOT) await page.screenshot({ path: path.join(__dirname, '../../docs/api-docs.png') });
  });

  it('leaves the admin API its JSON answers', async () => {
    const res = await page.request.get(`${base}/admin/api/nowhere`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status()).toBe(404);
    expect(await res.json()).toEqual({ ok: false, error: 'no route GET /admin/api/nowhere' });
  });

  it('fails on a request to another host (the guard itself works)', async () => {
    const probe = await page.context().newPage();
    await probe.setContent('<p>probe</p>');
    await probe.evaluate(() => fetch('https://cdn.example.com/x.js').catch(() => undefined));
    await probe.close();
    expect(external).toEqual(['https://cdn.example.com/x.js']);
    external.length = 0;
  });
});
