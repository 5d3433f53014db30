import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { config } from './config';
import { dependencies } from './outage';
import { connectRedis, hashTagged, serverOptions } from './redis-connect';

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
  /** one job per prospect and due check: fetch the page the prospect gave and look for the campaign's target link */
  links: 'links',
  /** one job per (event, webhook): POST the event to the endpoint, signed */
  webhook: 'webhook',
  /** one job per broadcast start or resume: snapshot the audience, write and queue the copies page by page */
  broadcast: 'broadcast',
  /** one job per import of subscribers: apply its stored lines in batches (apps/core/src/imports) */
  imports: 'imports',
} as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

/** Payloads carry ids only: the processor reloads the row and re-checks it. */
export interface JobPayloads {
  delivery: { messageId: string } | DispatchPayload;
  sequence: { prospectId: number; step: number };
  maintenance: { task: 'reconcile' | 'schedule' | 'cleanup' | 'links' | 'retention' | 'imports' | 'domains' | 'series' | 'tracking-domains' | 'partitions' };
  links: { prospectId: number };
  /** `attemptsBefore`: attempts made before this job (a job rebuilt from Postgres after Redis lost the first) */
  webhook: { eventId: string; webhookId: number; attemptsBefore?: number };
  broadcast: { broadcastId: number };
  imports: { importId: number };
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
  /** named after the claim's lease end (epoch ms): each claim of a prospect is a new check */
  link: (prospectId: number, claimedUntil: number) => `link-${prospectId}-${claimedUntil}`,
  webhook: (eventId: string, webhookId: number) => `wh-${eventId}-${webhookId}`,
  broadcast: (broadcastId: number, run: number) => `bc-${broadcastId}-${run}`,
  import: (importId: number) => `imp-${importId}`,
};

/** Attempts, backoff and retention per queue. */
export const JOB_OPTIONS: Record<QueueName, JobsOptions> = {
  // SMTP outages last minutes to hours: 8 tries, waiting 20 s, 40 s, ... 21 min 20 s between them, span 42 min 20 s
  // (a row first tried in a dispatch batch waits 20 s more: 9 tries over 42 min 40 s); after that the row is marked
  // failed (test/sending/retry-budget.test.ts). The row, not the job, is the record, so finished jobs are dropped soon.
  delivery: {
    attempts: 8,
    backoff: { type: 'exponential', delay: 20_000 },
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
  // A failed fetch is recorded by the check itself; a job fails only on a database hiccup, retried a few times. Past
  // that the claim's lease runs out and the `links` task claims the prospect again.
  links: {
    attempts: 3,
    backoff: { type: 'exponential', delay: 5_000 },
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  // Receivers go down for hours: 1 try + 7 retries at WEBHOOK_RETRY_BASE_MS x 4^n (30 s ... 8 h 32 min, about 1.9 days
  // in all). Finished jobs stay a day so that a fan-out repeated after a crash finds their ids and adds nothing.
  webhook: {
    attempts: 8,
    backoff: { type: 'webhook' },
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  // A broadcast job only reads Postgres and queues copies; it picks up where the copies stand, so retrying is safe.
  broadcast: {
    attempts: 10,
    backoff: { type: 'exponential', delay: 2_000 },
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  // An import job resumes from the import's cursor (the row is the record), so a retry repeats no line.
  imports: {
    attempts: 10,
    backoff: { type: 'exponential', delay: 2_000 },
    removeOnComplete: { age: 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
};

/**
 * Worker lock settings of every queue: a dead worker's active jobs are looked for every 5 s, not BullMQ's 30 s. A job
 * whose lock (30 s, renewed every 15 s) ran out goes back to waiting within 5 s, so a dead worker's jobs run again
 * about when its rows' leases run out (30 s); with the 30 s check the two passes BullMQ needs took up to 60 s more.
 */
export const WORKER_LOCK = { stalledInterval: 5_000 } as const;

/**
 * Worker lock settings of the webhook queue: a delivery lasts 10 s at most and is cheap to repeat, so a dead worker's
 * jobs are taken over after 15 s (looked for every 5 s) rather than BullMQ's 30 s + 30 s.
 */
export const WEBHOOK_WORKER_LOCK = { ...WORKER_LOCK, lockDuration: 15_000 } as const;

/**
 * The wait before retry n (1-based, counting the attempts of the event's earlier jobs) of a webhook delivery:
 * WEBHOOK_RETRY_BASE_MS x 4^(n-1). Workers pass it to BullMQ; the recovery of lost jobs computes due times with it.
 */
export function webhookRetryDelayMs(attemptsMade: number): number {
  return config().webhookRetryBaseMs * 4 ** Math.max(0, attemptsMade - 1);
}

/** BullMQ's backoff strategy of the workers: the webhook queue's, counting a rebuilt job's earlier attempts. */
export function retryDelayMs(attemptsMade: number, type?: string, _err?: unknown, job?: { data?: { attemptsBefore?: number } }): number {
  if (type !== 'webhook') throw new Error(`no backoff strategy named ${type}`);
  return webhookRetryDelayMs((job?.data?.attemptsBefore ?? 0) + attemptsMade);
}

/**
 * Reconnect every 0.25 s to 2 s while Redis is away (BullMQ's own default grows to 20 s between attempts, so a worker
 * noticed a restarted Redis up to 20 s late).
 */
const reconnectSoon = (attempt: number) => Math.min(250 * attempt, 2_000);

/**
 * BullMQ's connection from REDIS_URL (and REDIS_SENTINELS or REDIS_CLUSTER_NODES). Options for one server or Sentinel,
 * which BullMQ connects and closes itself; a Cluster has to be given as a connection, which lives as long as the process.
 */
export function queueConnection(): ConnectionOptions {
  return connection({ maxRetriesPerRequest: null, retryStrategy: reconnectSoon });
}

/**
 * The producer side's connection: no offline queue, so while Redis is down adding a job fails at once (the API then
 * answers 202 from Postgres and leaves the rows to the reconciler) instead of waiting for a reconnection.
 */
export function producerConnection(): ConnectionOptions {
  return connection({ maxRetriesPerRequest: null, enableOfflineQueue: false, retryStrategy: reconnectSoon });
}

function connection(options: Parameters<typeof connectRedis>[0]): ConnectionOptions {
  return (config().redisClusterNodes ? connectRedis(options) : { ...serverOptions(), ...options }) as ConnectionOptions;
}

/** Every queue's keys start with it; on a Cluster it is a hash tag, so that each of BullMQ's scripts stays in one slot. */
export function queuePrefix(): string {
  return hashTagged(`${config().redisPrefix}:bull`);
}

const queues = new Map<QueueName, Queue>();

/** The producer side of a queue, one per process and name. */
export function queue<N extends QueueName>(name: N): Queue<JobPayloads[N]> {
  let q = queues.get(name);
  if (!q) {
    q = new Queue(name, { connection: producerConnection(), prefix: queuePrefix(), defaultJobOptions: JOB_OPTIONS[name] });
    // reported by callers that await queue calls; Redis going away and coming back: the dependency watch's lines
    q.on('error', (err) => dependencies.down('redis', err));
    queues.set(name, q);
  }
  return q as unknown as Queue<JobPayloads[N]>;
}

export async function closeQueues(): Promise<void> {
  const all = [...queues.values()];
  queues.clear();
  await Promise.all(all.map((q) => q.close()));
}
