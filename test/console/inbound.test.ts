import type { Page } from 'playwright-core';
import { db } from '../../apps/core/src/db';
import { classify } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { useApi } from '../helpers/api';
import { makeMailbox, makeTenant } from '../helpers/factories';
import { useConsoleBrowser } from './browser';

/** The console's Inbound page shows a received email's body (docs/inbound-events.md); a campaign's page its rotation. */
jest.setTimeout(90_000);

const ctx = useApi();
let base: string;
let page: Page;
const view = useConsoleBrowser(ctx, { signIn: true });
beforeAll(() => ({ base, page } = view));

it("shows a received email's text, its html in a sandboxed iframe with no script, and its attachments", async () => {
  const tenant = await makeTenant();
  const raw = Buffer.from(
    [
      'From: reader@reader.test', 'To: desk@service.test', 'Subject: A question', 'Message-ID: <q1@reader.test>', 'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="B"', '', '--B', 'Content-Type: multipart/alternative; boundary="C"', '', '--C', 'Content-Type: text/plain', '',
      'Plain words here.', '--C', 'Content-Type: text/html', '', '<p id="x">Rich <b>words</b></p><script>document.title="pwned"</script><img src="http://127.0.0.1:9/pixel.gif" onerror="document.title=1">',
      '--C--', '--B', 'Content-Type: text/plain; name="n.txt"', 'Content-Disposition: attachment; filename="n.txt"', '', 'note', '--B--', '',
    ].join('\r\n'),
  );
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
  await db().inboundCursor.create({ data: { mailboxId: mailbox.id, uidValidity: 1n, lastUid: 0n } });
  await handleInbound(db(), { mailbox, uidValidity: 1n, uid: 1n, raw }, await classify(raw));
  const row = await db().inboundMessage.findFirstOrThrow({ where: { mailboxId: mailbox.id } });

  await page.goto(`${base}/admin/inbound?mailbox=${mailbox.id}`);
  await page.click('text=A question');
  expect(page.url()).toBe(`${base}/admin/inbound/${row.id}`);
  expect(await page.locator('pre.mail-text').innerText()).toContain('Plain words here.');
  const frame = page.locator('iframe.mail-body');
  expect(await frame.getAttribute('sandbox')).toBe('');
  expect(await page.frameLocator('iframe.mail-body').locator('#x').innerText()).toBe('Rich words');
  expect(await page.frameLocator('iframe.mail-body').locator('script').count()).toBe(0);
  expect(await page.title()).not.toMatch(/pwned|^1$/);
  expect(await page.locator('a', { hasText: 'n.txt' }).getAttribute('href')).toMatch(/\/inbound\/files\/[0-9a-f-]+\?expires=\d+&signature=/);
});

it("sets a campaign's rotation from its page and shows sends per mailbox", async () => {
  const tenant = await makeTenant();
  const second = await makeMailbox(tenant.account.id);
  await page.goto(`${base}/admin/campaigns`);
  const made = await db().campaign.create({ data: { accountId: tenant.account.id, mailboxId: tenant.mailbox.id, name: 'rot', goal: 'sales', steps: { create: [{ position: 1, key: '1', subject: 's', body: 'b', delayHours: 0 }] } } });
  await page.goto(`${base}/admin/campaigns/${made.id}`);
  // the rotation's checkboxes and positions: the second mailbox ticked and put first
  await page.check(`#rotation-${second.id}`);
  await page.fill(`input[aria-label="Position of ${second.address}"]`, '1');
  await page.fill(`input[aria-label="Position of ${tenant.mailbox.address}"]`, '2');
  await page.click('text=Save mailboxes');
  expect(await page.locator('.flash').innerText()).toContain(`${second.id}, ${tenant.mailbox.id}`);
  expect(await page.locator('table.stats-mailboxes tbody tr').count()).toBe(2);
  expect((await db().campaign.findUniqueOrThrow({ where: { id: made.id } })).mailboxId).toBe(second.id);
});
