import { db } from '../../apps/core/src/db';
import { createKey } from '../../apps/core/src/auth/keys';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { submissionClient, useSubmission } from '../smtp/support';

/** A test key over SMTP submission (docs/smtp.md, docs/sandbox.md): accepted as a live key's message, kept, never sent. */
useApi();
const sink = useMail({ queues: ['delivery'] });
const smtp = useSubmission();

it("keeps a test key's submitted message as written and plays its magic recipient; nothing reaches an SMTP server or the daily limit", async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const { token, key } = await createKey(db(), { account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'ci', daily_limit: 1, mode: 'test' });
  const before = sink.messages.length;
  const info = await submissionClient(smtp.port, token).sendMail({
    from: tenant.mailbox.address,
    to: ['delivered@sandbox.test', 'bounce@sandbox.test'],
    subject: 'Submitted to the sandbox',
    text: 'Over SMTP',
    headers: { 'X-App': 'ci' },
  });
  expect(info.accepted).toHaveLength(2);
  const send = await waitFor(() => db().send.findFirst({ where: { apiKeyId: key.id }, include: { messages: true } }), { what: 'the send' });
  expect(send.sandbox).toBe(true);
  await waitFor(async () => {
    const rows = await db().message.findMany({ where: { sendId: send.id } });
    return rows.every((r) => r.status === 'sent' || r.status === 'bounced') ? rows : null;
  }, { what: 'both copies played' });
  const byTo = Object.fromEntries((await db().message.findMany({ where: { sendId: send.id } })).map((m) => [m.to, m]));
  expect(byTo['delivered@sandbox.test']!.status).toBe('sent');
  expect(byTo['bounce@sandbox.test']!.status).toBe('bounced');
  const kept = await db().sandboxMessage.findUniqueOrThrow({ where: { messageId: byTo['delivered@sandbox.test']!.id } });
  const raw = Buffer.from(kept.raw).toString('utf8');
  expect(raw).toContain('Subject: Submitted to the sandbox');
  expect(raw).toContain('X-App: ci');
  expect(sink.messages.length).toBe(before);
  expect(await db().keyDailyUsage.count({ where: { apiKeyId: key.id } })).toBe(0);
});
