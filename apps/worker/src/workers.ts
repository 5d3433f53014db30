import { Worker, type Processor } from 'bullmq';
import { config } from '../../core/src/config';
import { logger } from '../../core/src/logger';
import { registerSequenceGuard } from '../../core/src/outreach/guard';
import { registerConfirmationGuard } from '../../core/src/subscribers/guard';
import { QUEUE, queue, queueConnection, queuePrefix, type JobPayloads, type QueueName } from '../../core/src/queues';
import { processBroadcast } from './processors/broadcast';
import { processDelivery } from './processors/delivery';
import { MAINTENANCE_EVERY_MS, processMaintenance } from './processors/maintenance';
import { processSequenceStep } from './processors/sequence';

const processors: { [N in QueueName]: Processor<JobPayloads[N]> } = {
  delivery: processDelivery,
  sequence: processSequenceStep,
  maintenance: processMaintenance,
  broadcast: processBroadcast,
};

export interface WorkerOptions {
  concurrency?: number;
  queues?: QueueName[];
}

/** One BullMQ worker per queue. Used by main.ts and by tests that want a worker in-process. */
export function createWorkers(options: WorkerOptions = {}): Worker[] {
  // what the delivery processor asks right before SMTP: is this email still wanted?
  registerConfirmationGuard();
  registerSequenceGuard();
  const concurrency = options.concurrency ?? config().workerConcurrency;
  return (options.queues ?? Object.values(QUEUE)).map((name) => {
    const worker = new Worker(name, processors[name] as Processor, {
      connection: queueConnection(),
      prefix: queuePrefix(),
      concurrency: name === QUEUE.maintenance ? 1 : concurrency,
    });
    worker.on('failed', (job, err) =>
      logger.warn({ queue: name, job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job failed'),
    );
    worker.on('error', (err) => logger.error({ queue: name, err: err.message }, 'worker error'));
    return worker;
  });
}

/** Registers the repeatable housekeeping jobs (idempotent: a scheduler id is one schedule, however many workers start). */
export async function scheduleMaintenance(): Promise<void> {
  const maintenance = queue(QUEUE.maintenance);
  for (const [task, every] of Object.entries(MAINTENANCE_EVERY_MS)) {
    await maintenance.upsertJobScheduler(task, { every }, { name: task, data: { task: task as JobPayloads['maintenance']['task'] } });
  }
}
