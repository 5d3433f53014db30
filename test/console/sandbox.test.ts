import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { createKey } from '../../apps/core/src/auth/keys';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { useConsoleBrowser } from './browser';

/** The console's Sandbox page (docs/sandbox.md): the messages test keys sent, and each one as built for the wire. */
jest.setTimeout(90_000);

const ctx = useApi();
useMail({ queues: ['delivery'] });
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

it("lists a test key's kept messages with the part each recipient plays, and shows one as built for the wire", async () => {
  const tenant = await makeTenant();
  const { token } = await createKey(db(), { account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'ci', daily_limit: 10, mode: 'test' });
  const res = await as(ctx.api, token).post('/api/v1/send').send({ to: ['bounce+x@sandbox.test', 'someone@example.org'], subject: 'Sandboxed <hello>', text: 'Kept, not sent.' });
  expect(res.status).toBe(202);
  await waitFor(async () => (await db().sandboxMessage.count({ where: { message: { sendId: res.body.id } } })) === 2, { what: 'both copies kept' });
  // kept first, then marked with the part each plays: the page is read once both are marked
  await waitFor(async () => (await db().message.count({ where: { sendId: res.body.id, status: { in: ['queued', 'sending'] } } })) === 0, { what: 'both copies marked' });

  await page.goto(`${base}/admin/sandbox?account=${tenant.account.id}`);
  const rows = await page.locator('tbody tr').allInnerTexts();
  expect(rows).toHaveLength(2);
  expect(rows.find((r) => r.includes('bounce+x@sandbox.test'))).toMatch(/bounced\s+bounce$/);
  expect(rows.find((r) => r.includes('someone@example.org'))).toMatch(/sent\s+delivered$/);
  await page.locator('tbody tr', { hasText: 'someone@example.org' }).locator('a').click();
  const raw = await page.locator('pre.mail-text').innerText();
  expect(raw).toContain('Subject: Sandboxed <hello>');
  expect(raw).toContain('To: someone@example.org');
  expect(raw).toContain('Kept, not sent.');

  await page.goto(`${base}/admin/sandbox/00000000-0000-7000-8000-000000000000`);
  expect(await page.locator('body').innerText()).toMatch(/kept no message/);
});
