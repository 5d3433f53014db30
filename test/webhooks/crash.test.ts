import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { hook, useLateWorker, useReceiver } from './support';

/** A worker process killed (SIGKILL) while a receiver is still answering: the delivery is not lost. */
const ctx = useApi();
const receiver = useReceiver();
const live = useLateWorker();

it('a worker killed mid-delivery still delivers: another worker sends the same webhook-id again', async () => {
  const account = await makeAccount();
  const h = await hook(ctx.api, account.id, receiver);
  receiver.hold = true;
  const dying = runTs('test/webhooks/fixtures/worker.ts');
  await waitFor(() => /^\d+\n/.test(dying.stdout()), { timeout: 30_000, what: 'the worker\'s pid' });
  await db().$transaction((tx) => emitEvent(tx, account.id, 'subscriber.confirmed', { list: 'news', email: 'k@reader.org', status: 'active' }));
  const [first] = await waitFor(() => (receiver.deliveries.length ? receiver.deliveries : undefined), { timeout: 30_000, what: 'the dying worker\'s request' });
  // tsx runs the script in a child of its own: kill that very process, as a crash or the OOM killer would
  process.kill(Number(dying.stdout().trim().split('\n')[0]), 'SIGKILL');
  await dying.exited;
  receiver.hold = false;

  // the job was taken by the dead worker: a live one finds it stalled once its lock runs out, and runs it again
  live.start();
  const [delivered] = await waitFor(() => {
    const ok = receiver.accepted('subscriber.confirmed').filter((d) => d.id === first!.id && d.status === 200 && d !== first);
    return ok.length ? ok : undefined;
  }, { timeout: 60_000, interval: 250, what: 'the delivery from a live worker' });
  expect(delivered!.verifiedBy).toEqual([h.secret]);
  expect(delivered!.body).toBe(first!.body);
  expect(first!.verifiedBy).toEqual([h.secret]);
  const rows = await waitFor(async () => {
    const found = await db().webhookDelivery.findMany({ where: { webhookId: h.id, statusCode: 200 } });
    return found.length ? found : undefined;
  });
  expect(rows).toEqual([expect.objectContaining({ eventId: first!.id, type: 'subscriber.confirmed' })]);
}, 90_000);
