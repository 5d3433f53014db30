import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { config } from './config';

/**
 * Every queue and job name, one place. Renaming a queue strands the jobs already in Redis under the old name:
 * drain it first, or let the reconciler re-queue from Postgres (it can, since the database row is the state).
 */
export const QUEUE = {
  /**
   * one job per Message row: deliver it over SMTP. The API may instead queue one `dispatch` job for a whole batch of
   * rows, which a worker delivers together, giving a row it cannot send at once its own job (DISPATCH).
   */
  delivery: 'delivery',
  /** one job per prospect and step: write the next email of an outreach sequence */
  sequence: 'sequence',
  /** repeatable housekeeping: re-queue stranded messages, claim due prospects, expire idempotency records */
  maintenance: 'maintenance',
  /** one job per broadcast start or resume: snapshot the audience, write and queue the copies page by page */
  broadcast: 'broadcast',
} as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

/** Payloads carry ids only: the processor reloads the row and re-checks it. */
export interface JobPayloads {
  delivery: { messageId: string } | DispatchPayload;
  sequence: { prospectId: number; step: number };
  maintenance: { task: 'reconcile' | 'schedule' | 'cleanup' };
  broadcast: { broadcastId: number };
}

/** A batch of rows to put on the delivery queue; `notBefore` in epoch milliseconds (send_at), or null. */
export interface DispatchPayload {
  messages: { id: string; notBefore: number | null }[];
}

/** The name of the batch jobs on the delivery queue (delivery jobs themselves are named after the queue). */
export const DISPATCH = 'dispatch';

/** Deterministic job ids (no ":" — BullMQ reserves it), never reused for different work. */
export const jobId = {
  delivery: (messageId: string) => `msg-${messageId}`,
  /** named after the batch's first row: a row is accepted once, so no two batches share it */
  dispatch: (firstMessageId: string) => `fan-${firstMessageId}`,
  sequence: (prospectId: number, step: number) => `seq-${prospectId}-${step}`,
  broadcast: (broadcastId: number, run: number) => `bc-${broadcastId}-${run}`,
};

/** Attempts, backoff and retention per queue. */
export const JOB_OPTIONS: Record<QueueName, JobsOptions> = {
  // SMTP outages last minutes to hours: 8 tries with exponential backoff from 10 s spans about 40 minutes;
  // after that the row is marked failed. The row, not the job, is the record, so finished jobs are dropped soon.
  delivery: {
    attempts: 8,
    backoff: { type: 'exponential', delay: 10_000 },
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  // A step job only claims the step and writes a Message row: failures are database hiccups, retried quickly.
  sequence: {
    attempts: 5,
    backoff: { type: 'exponential', delay: 2_000 },
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  // Housekeeping runs again on its own schedule: no retries, keep little.
  maintenance: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
  // A broadcast job only reads Postgres and queues copies; it picks up where the copies stand, so retrying is safe.
  broadcast: {
    attempts: 10,
    backoff: { type: 'exponential', delay: 2_000 },
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
};

/** BullMQ's connection options from REDIS_URL. */
export function queueConnection(): ConnectionOptions {
  return { url: config().redisUrl, maxRetriesPerRequest: null } as ConnectionOptions;
}

export function queuePrefix(): string {
  return `${config().redisPrefix}:bull`;
}

const queues = new Map<QueueName, Queue>();

/** The producer side of a queue, one per process and name. */
export function queue<N extends QueueName>(name: N): Queue<JobPayloads[N]> {
  let q = queues.get(name);
  if (!q) {
    q = new Queue(name, { connection: queueConnection(), prefix: queuePrefix(), defaultJobOptions: JOB_OPTIONS[name] });
    q.on('error', () => undefined); // reported by callers that await queue calls
    queues.set(name, q);
  }
  return q as unknown as Queue<JobPayloads[N]>;
}

export async function closeQueues(): Promise<void> {
  const all = [...queues.values()];
  queues.clear();
  await Promise.all(all.map((q) => q.close()));
}
