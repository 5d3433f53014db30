import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import type { DeliveryRegistrations } from '../../apps/core/src/delivery/delivery';
import type { PreSendGuards } from '../../apps/core/src/delivery/guards';
import { deliveryRegistrations, EMAIL_KINDS } from '../../apps/core/src/email-kinds';
import type { MessageKind } from '../../generated/prisma/enums';
import { SandboxSink } from '../../apps/core/src/sandbox/sink';
import type { QueueName } from '../../apps/core/src/queues';
import { createWorkers } from '../../apps/worker/src/workers';
import { SmtpSink } from './smtp-sink';

/**
 * An SMTP sink for the file's tests and, when `queues` are named, in-process workers on them, wired as the worker's
 * main.ts wires them: with the file's `delivery` (useDelivery) when given, so that the tests' direct calls and the
 * workers share it as a process's jobs do, else with one of their own. Closed in the order that cannot hang: workers
 * first, then the pooled SMTP connections, then the sink.
 */
export function useMail(options: { queues?: QueueName[]; concurrency?: number; delivery?: { readonly delivery: Delivery } } = {}): SmtpSink {
  const sink = new SmtpSink();
  let workers: Worker[] = [];
  let delivery: Delivery | undefined;
  beforeAll(async () => {
    await sink.start();
    delivery = options.delivery?.delivery;
    if (options.queues?.length) {
      delivery ??= createDelivery(db(), deliveryRegistrations(), { sandbox: new SandboxSink() });
      workers = createWorkers({ db: db(), delivery, queues: options.queues, concurrency: options.concurrency ?? 5 });
    }
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    delivery?.close();
    await sink.stop();
  });
  return sink;
}

/**
 * A worker process's delivery for the file's tests to call directly (deliverMessage, deliverBatch, the delivery
 * processor), made as main.ts makes it, with the production registrations (the guards of `guards` instead of theirs
 * when given). Its SMTP pools close when the file ends; with a sink of useMail, pass it there (useMail closes it before
 * the sink stops).
 */
export function useDelivery(guards?: PreSendGuards): { readonly delivery: Delivery } {
  let delivery: Delivery | undefined;
  beforeAll(() => {
    delivery = createDelivery(db(), guards ? withGuards(guards) : deliveryRegistrations(), { sandbox: new SandboxSink() });
  });
  afterAll(() => delivery?.close());
  return {
    get delivery() {
      if (!delivery) throw new Error('useDelivery(): the delivery is made in beforeAll');
      return delivery;
    },
  };
}

/**
 * The production registrations (core/src/email-kinds) with a test's own pre-send guards instead of theirs: everything
 * else (links, what follows an end, logins) as the worker has it.
 */
export function withGuards(guards: PreSendGuards): DeliveryRegistrations {
  const unguarded = EMAIL_KINDS.map(({ guard: _guard, ...rest }) => rest);
  const own = Object.entries(guards).map(([kind, guard]) => ({ kinds: [kind as MessageKind], guard }));
  return deliveryRegistrations([...unguarded, ...own]);
}
