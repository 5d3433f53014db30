import { useApi } from '../helpers/api';
import { db } from '../../apps/core/src/db';
import { createTemplate } from '../../apps/core/src/templates/service';
import { makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from './browser';

/**
 * The console's template editor in a real browser: the list, a template made and edited, the preview in a sandboxed
 * frame (no script runs in it), and a restore from the versions.
 */
const ctx = useApi();
const b = useConsoleBrowser(ctx, { signIn: true });

it('creates a template, previews the unsaved edit in a sandboxed frame where no script runs, saves versions and restores one', async () => {
  const tenant = await makeTenant();
  const page = b.page;
  await page.goto(`${b.base}/admin/templates`);
  await page.selectOption('select[name=account]', String(tenant.account.id));
  await page.fill('input[name=name]', 'Welcome mail');
  await page.fill('input[name=alias]', `welcome-${tenant.account.id}`);
  await page.fill('form[action="/admin/templates"] input[name=subject]', 'Hello {{ name }}');
  await page.fill('form[action="/admin/templates"] textarea[name=html]', '<p id="greeting">Hello {{ name }}</p>');
  await page.click('button:has-text("Create")');
  await page.waitForURL(/\/admin\/templates\/\d+$/);
  expect(await page.textContent('#template-version')).toBe('1');

  const frame = page.locator('#preview');
  expect(await frame.getAttribute('sandbox')).toBe('');
  // an edit, previewed before it is saved: the value escaped, a script in the variables inert, the subject raw
  let scriptRan = false;
  page.on('console', (m) => {
    if (m.text().includes('ran')) scriptRan = true;
  });
  await page.fill('#editor textarea[name=html]', '<p id="greeting">Hi {{ name }}!</p><script>console.log("ran")</script><p>{{ name | raw }}</p>');
  await page.fill('#editor input[name=subject]', 'Hi {{ name }} & co');
  // the variables' fields are generated from the template's: its {{ name }}
  expect(await page.locator('#editor input[name^="var."]').evaluateAll((inputs) => inputs.map((i) => i.getAttribute('name')))).toEqual(['var.name']);
  await page.fill('#editor input[name="var.name"]', '<img src=x onerror="console.log(\'ran\')">Ann');
  const loaded = page.waitForResponse((r) => r.url().endsWith('/preview') && r.request().method() === 'POST');
  await page.click('#preview-button');
  const answer = await loaded;
  expect(answer.headers()['content-security-policy']).toMatch(/sandbox/);
  const inner = page.frameLocator('#preview');
  await inner.locator('#greeting').waitFor();
  expect(await inner.locator('#greeting').textContent()).toBe('Hi <img src=x onerror="console.log(\'ran\')">Ann!');
  expect(await inner.locator('#preview-subject').textContent()).toBe('Hi <img src=x onerror="console.log(\'ran\')">Ann & co');
  expect(scriptRan).toBe(false);
  // not saved by a preview
  await page.reload();
  expect(await page.textContent('#template-version')).toBe('1');

  await page.fill('#editor input[name=subject]', 'Second subject');
  await page.click('button:has-text("Save as a new version")');
  await page.waitForSelector('text=Saved as version 2.');
  expect(await page.textContent('#template-version')).toBe('2');
  await page.click('form[action$="/restore"] button:has-text("Restore")');
  await page.waitForSelector('text=Restored as version 3.');
  expect(await page.inputValue('#editor input[name=subject]')).toBe('Hello {{ name }}');

  // a syntax error is shown in the frame, naming the line
  await page.fill('#editor textarea[name=html]', '<p>one</p>\n{% if name %}');
  const refused = page.waitForResponse((r) => r.url().endsWith('/preview') && r.request().method() === 'POST');
  await page.click('#preview-button');
  expect((await refused).status()).toBe(400);
  expect(await inner.locator('#preview-error').textContent()).toMatch(/line 2/);
});

it('sends a test of the saved version with the variables typed in its generated fields, audited', async () => {
  const tenant = await makeTenant();
  const template = await createTemplate(db(), { account: tenant.account.id, kind: 'template', name: 'Receipt', subject: 'Receipt for {{ name }}', text: 'Total: {{ fields.total }}', required: ['name'] });
  const page = b.page;
  await page.goto(`${b.base}/admin/templates/${template.id}`);
  expect(await page.locator('#test-send input[name^="var."]').evaluateAll((inputs) => inputs.map((i) => i.getAttribute('name')))).toEqual(['var.name', 'var.fields.total']);
  await page.fill('#test-send input[name=to]', 'Checker@Example.org');
  await page.fill('#test-send input[name="var.name"]', 'Ann');
  await page.fill('#test-send input[name="var.fields.total"]', '12 EUR');
  await page.click('button:has-text("Send the test")');
  expect(await page.locator('.flash').innerText()).toMatch(/^Test email to checker@example\.org queued: "Receipt for Ann"/);
  const message = await db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to: 'checker@example.org' } });
  expect(message).toMatchObject({ subject: 'Receipt for Ann', text: 'Total: 12 EUR', mailboxId: tenant.mailbox.id });
  expect(await db().auditEntry.count({ where: { action: 'test-send', resourceId: String(template.id) } })).toBe(1);

  // a required variable left empty: refused, nothing sent
  await page.fill('#test-send input[name=to]', 'checker@example.org');
  await page.click('button:has-text("Send the test")');
  expect(await page.locator('.error').innerText()).toMatch(/name/);
  expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(1);
});
