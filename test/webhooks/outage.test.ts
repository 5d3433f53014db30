import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { freePort, runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { hook, useLateWorker, useReceiver } from './support';

/** Redis is only the queue: the outbox in Postgres keeps every event a fan-out could not hand over. */
const ctx = useApi();
const receiver = useReceiver();
const live = useLateWorker();

it('events fanned out while Redis is away stay undispatched in Postgres and are delivered once a worker reaches Redis', async () => {
  const account = await makeAccount();
  await hook(ctx.api, account.id, receiver);
  await db().$transaction((tx) => emitEvent(tx, account.id, 'subscriber.pending', { list: 'news', email: 'o@reader.org', status: 'pending' }));
  const event = await db().event.findFirstOrThrow({ where: { accountId: account.id } });

  // a worker whose Redis does not answer: its pass gives up and rolls back
  const cut = runTs('test/webhooks/fixtures/dispatch-once.ts', [], { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
  expect(await cut.exited).toBe(1);
  expect(cut.stdout()).toMatch(/failed: Redis did not take the webhook jobs/);
  expect((await db().event.findUniqueOrThrow({ where: { id: event.id } })).dispatchedAt).toBeNull();

  live.start();
  const [delivered] = await waitFor(() => {
    const found = receiver.accepted('subscriber.pending');
    return found.length ? found : undefined;
  }, { timeout: 20_000, what: 'the delivery' });
  expect(delivered!.id).toBe(event.id);
  expect(delivered!.verifiedBy.length).toBe(1);
  expect((await db().event.findUniqueOrThrow({ where: { id: event.id } })).dispatchedAt).not.toBeNull();
}, 60_000);
