import { db } from '../../apps/core/src/db';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { Dovecot } from '../helpers/dovecot';
import { makeTenant } from '../helpers/factories';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/** The worker process reads inbound mail by itself and stops its IMAP loops on SIGTERM. */
const dove = new Dovecot();
beforeAll(() => dove.start({ 'desk@imap.test': 'pw' }), 60_000);
afterAll(() => dove.stop());

it('the worker reads a mailbox with an imap URL and exits 0 on SIGTERM', async () => {
  const tenant = await makeTenant();
  await updateMailbox(db(), tenant.mailbox.id, { imap: dove.url('desk@imap.test', 'pw') });
  const worker = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'info' });
  try {
    await waitFor(async () => (await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).inboundState === 'idle', { timeout: 40_000, what: 'the reader to connect' });
    await dove.append('desk@imap.test', 'pw', 'From: someone@example.org\r\nTo: desk@imap.test\r\nSubject: hello\r\nMessage-ID: <w1@example.org>\r\n\r\nhi\r\n');
    await waitFor(() => db().inboundMessage.findFirst({ where: { mailboxId: tenant.mailbox.id } }), { timeout: 20_000, what: 'the message to be read' });
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  } finally {
    if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
  }
  expect(await db().inboundMessage.findMany({ where: { mailboxId: tenant.mailbox.id } })).toEqual([expect.objectContaining({ kind: 'other', subject: 'hello', messageId: '<w1@example.org>' })]);
}, 90_000);
