import { Worker, type Job, type Processor } from 'bullmq';
import { config } from '../../core/src/config';
import type { Db } from '../../core/src/db';
import type { Delivery } from '../../core/src/delivery/deliver';
import { startHousekeeping, type Housekeeping } from '../../core/src/housekeeping';
import { logger } from '../../core/src/logger';
import { dependencies, isRedisConnectionError, isRedisStateLost } from '../../core/src/outage';
import { QUEUE, WEBHOOK_WORKER_LOCK, WORKER_LOCK, queue, queueConnection, queuePrefix, retryDelayMs, type JobPayloads, type QueueName } from '../../core/src/queues';
import { deliveryProcessor } from './processors/delivery';
import { linkCheckProcessor } from './processors/links';
import { MAINTENANCE_EVERY_MS, maintenanceProcessor, maintenanceTasks } from './processors/maintenance';
import { sequenceProcessor } from './processors/sequence';
import { webhookProcessor } from './processors/webhook';
import { broadcastProcessor } from './processors/broadcast';
import { importProcessor } from './processors/imports';
import { Verifier } from '../../core/src/verify';
import { builtReceived } from '../../core/src/mx/store';

export interface WorkerOptions {
  /** the process's database handle: every processor runs on it (main's `db()`) */
  db: Db;
  /** the process's delivery: its pre-send guards, shared claims and SMTP pools (createDelivery in main) */
  delivery: Delivery;
  concurrency?: number;
  queues?: QueueName[];
  /** address verification for imports that ask for it (docs/verification.md); made here when not given */
  verifier?: Verifier;
}

/** One BullMQ worker per queue. Used by main.ts and by tests that want a worker in-process. */
export function createWorkers(options: WorkerOptions): Worker[] {
  const { db, delivery } = options;
  const processors: { [N in QueueName]: Processor<JobPayloads[N]> } = {
    delivery: deliveryProcessor(delivery),
    sequence: sequenceProcessor(db),
    maintenance: maintenanceProcessor(db),
    links: linkCheckProcessor(db),
    // the MX writes its inbound.received short: its content is built here, once, before the first POST
    webhook: webhookProcessor(db, { 'inbound.received': builtReceived }),
    broadcast: broadcastProcessor(db, delivery.queue),
    imports: importProcessor(db, options.verifier ?? new Verifier()),
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
    worker.on('failed', (job, err) => onJobFailed(name, job, err));
    worker.on('error', (err) => onWorkerError(name, err));
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
  const tasks = maintenanceTasks(db);
  return startHousekeeping(
    db,
    Object.entries(MAINTENANCE_EVERY_MS).map(([name, everyMs]) => ({ name, everyMs, run: tasks[name as JobPayloads['maintenance']['task']] })),
  );
}

/**
 * A failed attempt with attempts left is the row's business (deferred with its error, or the webhook delivery's
 * record), logged at debug: a relay away for minutes failed thousands of attempts, a warn line each. The attempt that
 * ends the job's budget is a warn line.
 */
export function onJobFailed(queueName: string, job: Job | undefined, err: Error): void {
  const retried = job !== undefined && job.attemptsMade < (job.opts.attempts ?? 1);
  logger[retried ? 'debug' : 'warn']({ queue: queueName, job: job?.id, attempt: job?.attemptsMade, err: err.message }, retried ? 'job attempt failed; retrying' : 'job failed');
}

/**
 * BullMQ's worker errors. Redis away: the dependency watch's one line for the process. A job's keys or lock lost with
 * Redis (restarted empty, failed over): part of that outage, at debug, the reconciler rebuilds the work. Anything else
 * is an error line.
 */
export function onWorkerError(queueName: string, err: Error): void {
  if (isRedisConnectionError(err)) dependencies.down('redis', err);
  else if (isRedisStateLost(err)) logger[dependencies.wasAway('redis') ? 'debug' : 'warn']({ queue: queueName, err: err.message }, 'a job lost its keys or lock in Redis');
  else logger.error({ queue: queueName, err: err.message }, 'worker error');
}
