import { Worker, type Processor } from 'bullmq';
import { config } from '../../core/src/config';
import type { Db } from '../../core/src/db';
import type { PreSendGuards } from '../../core/src/delivery/guards';
import { startHousekeeping, type Housekeeping } from '../../core/src/housekeeping';
import { logger } from '../../core/src/logger';
import { dependencies, isRedisConnectionError } from '../../core/src/outage';
import { QUEUE, WEBHOOK_WORKER_LOCK, WORKER_LOCK, queue, queueConnection, queuePrefix, retryDelayMs, type JobPayloads, type QueueName } from '../../core/src/queues';
import { deliveryProcessor } from './processors/delivery';
import { processLinkCheck } from './processors/links';
import { MAINTENANCE_EVERY_MS, maintenanceTasks, processMaintenance } from './processors/maintenance';
import { processSequenceStep } from './processors/sequence';
import { processWebhook } from './processors/webhook';
import { processBroadcast } from './processors/broadcast';
import { processImport } from './processors/imports';

export interface WorkerOptions {
  /** what the delivery processor asks right before SMTP: is this email still wanted? (productionGuards() in main) */
  guards: PreSendGuards;
  concurrency?: number;
  queues?: QueueName[];
}

/** One BullMQ worker per queue. Used by main.ts and by tests that want a worker in-process. */
export function createWorkers(options: WorkerOptions): Worker[] {
  const processors: { [N in QueueName]: Processor<JobPayloads[N]> } = {
    delivery: deliveryProcessor(options.guards),
    sequence: processSequenceStep,
    maintenance: processMaintenance,
    links: processLinkCheck,
    webhook: processWebhook,
    broadcast: processBroadcast,
    imports: processImport,
  };
  const concurrency = options.concurrency ?? config().workerConcurrency;
  return (options.queues ?? Object.values(QUEUE)).map((name) => {
    const worker = new Worker(name, processors[name] as Processor, {
      connection: queueConnection(),
      prefix: queuePrefix(),
      concurrency: name === QUEUE.maintenance ? 1 : concurrency,
      // the backoffs that are not BullMQ's own (webhook: base x 4^n)
      settings: { backoffStrategy: retryDelayMs },
      ...(name === QUEUE.webhook ? WEBHOOK_WORKER_LOCK : WORKER_LOCK),
    });
    worker.on('failed', (job, err) =>
      logger.warn({ queue: name, job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job failed'),
    );
    // Redis away: one warn line for the process (the dependency watch), not an error line per reconnection attempt
    worker.on('error', (err) => (isRedisConnectionError(err) ? dependencies.down('redis', err) : logger.error({ queue: name, err: err.message }, 'worker error')));
    return worker;
  });
}

/**
 * The housekeeping timers of a worker process (re-queue stranded messages, claim due prospects, expire idempotency
 * records): in the process, under Postgres advisory locks, so they survive Redis losing its data. The repeatable
 * jobs earlier versions kept in Redis for the same tasks are removed (they would only run the tasks twice).
 */
export function startMaintenance(db: Db): Housekeeping {
  const maintenance = queue(QUEUE.maintenance);
  void Promise.all(Object.keys(MAINTENANCE_EVERY_MS).map((task) => maintenance.removeJobScheduler(task))).catch(() => undefined);
  return startHousekeeping(
    db,
    Object.entries(MAINTENANCE_EVERY_MS).map(([name, everyMs]) => ({ name, everyMs, run: maintenanceTasks[name as JobPayloads['maintenance']['task']] })),
  );
}
