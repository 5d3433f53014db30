import type { Worker } from 'bullmq';
import { productionGuards } from '../../apps/core/src/delivery/production-guards';
import { closeTransports } from '../../apps/core/src/delivery/transport';
import type { QueueName } from '../../apps/core/src/queues';
import { createWorkers } from '../../apps/worker/src/workers';
import { SmtpSink } from './smtp-sink';

/**
 * An SMTP sink for the file's tests and, when `queues` are named, in-process workers on them. Closed in the order that
 * cannot hang: workers first, then the pooled SMTP connections, then the sink.
 */
export function useMail(options: { queues?: QueueName[]; concurrency?: number } = {}): SmtpSink {
  const sink = new SmtpSink();
  let workers: Worker[] = [];
  beforeAll(async () => {
    await sink.start();
    if (options.queues?.length) workers = createWorkers({ guards: productionGuards(), queues: options.queues, concurrency: options.concurrency ?? 5 });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    closeTransports();
    await sink.stop();
  });
  return sink;
}
