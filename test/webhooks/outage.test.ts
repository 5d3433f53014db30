import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { OVERDUE_AFTER_MS, rebuildWebhookJobs } from '../../apps/core/src/recovery';
import { useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { freePort, runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { hook, useLateWorker, useReceiver } from './support';

/** Redis is only the queue: Postgres keeps every delivery a fan-out could not hand over, and the reconciler adds its job. */
const ctx = useApi();
const receiver = useReceiver();
const live = useLateWorker();

it('deliveries fanned out while Redis is away wait as rows in Postgres and are delivered once the reconciler reaches Redis', async () => {
  const account = await makeAccount();
  await hook(ctx.api, account.id, receiver);
  await db().$transaction((tx) => emitEvent(tx, account.id, 'subscriber.pending', { list: 'news', email: 'o@reader.org', status: 'pending' }));
  const event = await db().event.findFirstOrThrow({ where: { accountId: account.id } });

  // a worker whose Redis does not answer: its pass commits the delivery owed, and the add fails
  const cut = runTs('test/webhooks/fixtures/dispatch-once.ts', [], { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
  expect(await cut.exited).toBe(1);
  expect(cut.stdout()).toMatch(/failed: /);
  expect((await db().event.findUniqueOrThrow({ where: { id: event.id } })).dispatchedAt).not.toBeNull();
  const owed = await db().webhookJob.findMany({ where: { eventId: event.id } });
  expect(owed).toHaveLength(1);

  live.start();
  // the reconcile task, once the row is overdue
  expect(await rebuildWebhookJobs(db(), new Date(owed[0]!.dueAt.getTime() + OVERDUE_AFTER_MS + 1))).toBe(1);
  const [delivered] = await waitFor(() => {
    const found = receiver.accepted('subscriber.pending');
    return found.length ? found : undefined;
  }, { timeout: 20_000, what: 'the delivery' });
  expect(delivered!.id).toBe(event.id);
  expect(delivered!.verifiedBy.length).toBe(1);
  await waitFor(async () => ((await db().webhookJob.count({ where: { eventId: event.id } })) === 0 ? true : undefined), { what: 'the row gone' });
}, 60_000);
