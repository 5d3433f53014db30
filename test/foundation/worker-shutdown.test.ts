import { db } from '../../apps/core/src/db';
import { enqueueDelivery, storeMessages } from '../../apps/core/src/delivery/outbox';
import { makeTenant } from '../helpers/factories';
import { runTs } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

describe('the worker process', () => {
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await new SmtpSink().start();
  });
  afterAll(() => sink.stop());

  it('on SIGTERM finishes the delivery in flight, then exits 0', async () => {
    sink.dataDelayMs = 1500;
    const tenant = await makeTenant({ smtp: sink.url });
    const [row] = await storeMessages(db(), [
      { accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'transactional', to: 'late@example.com', subject: 'In flight', text: 'body' },
    ]);
    // the worker process shares this file's database and Redis prefix through the environment
    const worker = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'info' });
    try {
      await enqueueDelivery(db(), [{ id: row!.id! }]);
      await waitFor(() => db().message.findUniqueOrThrow({ where: { id: row!.id! } }).then((m) => m.status === 'sending'), { timeout: 30_000, what: 'the delivery to start' });
      expect(sink.messages).toHaveLength(0);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    }
    expect(sink.to('late@example.com')).toHaveLength(1);
    const message = await db().message.findUniqueOrThrow({ where: { id: row!.id! } });
    expect(message.status).toBe('sent');
    expect(worker.stdout()).toContain('worker stopping');
  }, 60_000);
});
