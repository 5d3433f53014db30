import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import type { Worker } from 'bullmq';
import type { ApiApp } from '../../apps/api/src/app';
import { db } from '../../apps/core/src/db';
import { createDelivery } from '../../apps/core/src/delivery/deliver';
import { startDispatcher, type Dispatcher } from '../../apps/core/src/webhooks/dispatch';
import { createWorkers } from '../../apps/worker/src/workers';
import { asAdmin } from '../helpers/api';
import { Receiver } from './receiver';

/** The worker's fan-out (as main.ts starts it), running around the file's tests. */
export function useDispatcher(): void {
  let dispatcher: Dispatcher | undefined;
  beforeAll(() => {
    dispatcher = startDispatcher(db(), { everyMs: 50 });
  });
  afterAll(async () => {
    await dispatcher?.stop();
  });
}

/** A receiver on loopback, started and stopped around the file's tests. */
export function useReceiver(): Receiver {
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  return receiver;
}

export interface Hook {
  id: number;
  secret: string;
}

/** An endpoint of the account pointing at the receiver, made through the admin API; the receiver learns its secret. */
export async function hook(api: ApiApp, account: number, receiver: Receiver, events?: string[]): Promise<Hook> {
  const res = await asAdmin(api).post('/admin/api/webhooks').send({ account, url: receiver.url, events });
  if (res.status !== 201) throw new Error(`webhook not created: ${res.status} ${JSON.stringify(res.body)}`);
  receiver.secrets.push(res.body.webhook.secret);
  return { id: res.body.webhook.id, secret: res.body.webhook.secret };
}

/**
 * An in-process worker on the webhook queue and a dispatcher, started only when the test calls `start` (after it has
 * broken or killed another one), both stopped after the file's tests.
 */
export function useLateWorker(): { start: () => void } {
  let workers: Worker[] = [];
  let dispatcher: Dispatcher | undefined;
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(workers.map((w) => w.close()));
  });
  return {
    start: () => {
      workers = createWorkers({ db: db(), delivery: createDelivery(db(), deliveryRegistrations()), queues: ['webhook'], concurrency: 2 });
      dispatcher = startDispatcher(db(), { everyMs: 50 });
    },
  };
}
