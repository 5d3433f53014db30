import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from '../db';
import { partitionStates } from '../partitions';
import { QUEUE, queue } from '../queues';
import { certificateExpiries, countStatusesExactly, countStatusesUpTo, estimateStatuses, oldestDeferredSeconds } from './repository';

/**
 * The Prometheus metrics of docs/operator.md, one registry per process. The API serves it at GET /metrics (admin
 * token), a worker on WORKER_METRICS_PORT (worker-server.ts). Every metric is defined here, including those other
 * features increment (webhooks, inbound): a feature imports `metrics` and calls `.inc()`, nothing registers itself.
 * The definitions are constant; their values only grow (tests read differences). The process figures (CPU, memory,
 * event loop) are collected once a main asks for them (collectProcessMetrics), not on import.
 */
export const registry = new Registry();

const PREFIX = 'mailservice_';

/** The process figures (prom-client's default metrics, `mailservice_process_*`, `mailservice_nodejs_*`): each main calls it at start. */
export function collectProcessMetrics(): void {
  // once per registry: a second call (a test that runs a main's wiring twice) would register every metric again
  if (registry.getSingleMetric(`${PREFIX}process_cpu_user_seconds_total`)) return;
  collectDefaultMetrics({ register: registry, prefix: PREFIX });
}

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized', 'waiting-children'] as const;
/** Live statuses are counted exactly up to this many rows each (an index range on (status, not_before)). */
export const LIVE_COUNT_CAP = 100_000;
const LIVE_STATUSES = ['queued', 'sending', 'deferred'] as const;

/** Jobs per queue and state, straight from BullMQ (a few Redis calls per queue). */
export async function queueDepths(): Promise<{ queue: string; counts: Record<string, number> }[]> {
  return Promise.all(Object.values(QUEUE).map(async (name) => ({ queue: name as string, counts: await queue(name).getJobCounts(...QUEUE_STATES) })));
}

/** Exact counts of the messages still on their way (bounded: an index range per status, at most LIVE_COUNT_CAP rows each). */
export async function liveMessageCounts(db: Db): Promise<{ status: string; count: number }[]> {
  const rows = await countStatusesUpTo(db, LIVE_STATUSES, LIVE_COUNT_CAP);
  return rows.map((r) => ({ status: r.status, count: Number(r.n) }));
}

/** Messages by status as Postgres's statistics estimate them (reltuples x most-common-value frequencies): no scan at all. */
export async function estimatedMessageCounts(db: Db): Promise<{ status: string; count: number }[]> {
  const rows = await estimateStatuses(db);
  return rows.map((r) => ({ status: r.status, count: Number(r.n) }));
}

/** Up to this many messages in all, the console's overview counts them by status exactly (a scan of about 50 ms). */
export const EXACT_COUNT_CAP = 200_000;

/**
 * Messages by status for the console's overview: exact while the table holds up to EXACT_COUNT_CAP rows (so a new
 * install's figures are right at once, not after autovacuum's first ANALYZE), Postgres's estimate past it.
 */
export async function messageCountsByStatus(db: Db): Promise<{ exact: boolean; counts: { status: string; count: number }[] }> {
  const rows = await countStatusesExactly(db, EXACT_COUNT_CAP);
  if (rows.reduce((sum, r) => sum + Number(r.n), 0) <= EXACT_COUNT_CAP) return { exact: true, counts: rows.map((r) => ({ status: r.status, count: Number(r.n) })) };
  return { exact: false, counts: await estimatedMessageCounts(db) };
}

export const metrics = {
  httpSeconds: new Histogram({
    name: 'mailservice_http_request_duration_seconds',
    help: 'HTTP requests by method, route (the Express route pattern) and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  queueJobs: new Gauge({
    name: 'mailservice_queue_jobs',
    help: 'Jobs per BullMQ queue and state (getJobCounts at scrape time)',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
  }),
  messagesLive: new Gauge({
    name: 'mailservice_messages_live',
    help: `Messages still on their way, exact up to ${LIVE_COUNT_CAP} per status (read through the (status, not_before) index)`,
    labelNames: ['status'] as const,
    registers: [registry],
  }),
  messagesEstimate: new Gauge({
    name: 'mailservice_messages_estimate',
    help: "Messages by status, estimated from Postgres's statistics (pg_class.reltuples x pg_stats frequencies, as fresh as the last ANALYZE); no table scan",
    labelNames: ['status'] as const,
    registers: [registry],
  }),
  oldestDeferred: new Gauge({
    name: 'mailservice_oldest_deferred_seconds',
    help: 'Seconds since the oldest deferred message was accepted (0 when none is deferred), read at scrape time',
    registers: [registry],
  }),
  deliveries: new Counter({
    name: 'mailservice_deliveries_total',
    help: 'SMTP delivery attempts by result (sent, deferred, failed, bounced)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  smtpSeconds: new Histogram({
    name: 'mailservice_smtp_seconds',
    help: 'Duration of one SMTP conversation, by outcome (ok, error)',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  }),
  /** for the webhook deliverer: result is delivered, failed (will retry) or dead (gave up) */
  webhookDeliveries: new Counter({
    name: 'mailservice_webhook_deliveries_total',
    help: 'Webhook delivery attempts by result (delivered, failed, dead)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  webhookSeconds: new Histogram({
    name: 'mailservice_webhook_seconds',
    help: 'Duration of one webhook POST',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  /** for inbound mail: kind is reply, auto_reply, bounce, complaint or other */
  bounces: new Counter({
    name: 'mailservice_bounces_total',
    help: 'Bounces (reports read from mailboxes and SMTP refusals at delivery), by class of reason (dead, mailbox, not_address; temporary for 4.x.x) and reason',
    labelNames: ['class', 'reason'] as const,
    registers: [registry],
  }),
  inboundMessages: new Counter({
    name: 'mailservice_inbound_messages_total',
    help: 'Inbound emails read from mailboxes, by what they were classified as',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  inboundUnmatched: new Counter({
    name: 'mailservice_inbound_unmatched_total',
    help: 'Bounce and complaint reports that proved no message of ours (docs/inbound.md): recorded, not applied',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  inboundPolls: new Counter({
    name: 'mailservice_inbound_polls_total',
    help: 'IMAP polls of a mailbox by result (ok, error)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  /** SMTP submission (apps/smtp): served by the SMTP process on SMTP_METRICS_PORT */
  smtpSessions: new Counter({
    name: 'mailservice_smtp_sessions_total',
    help: 'SMTP submission connections opened (refused ones included)',
    registers: [registry],
  }),
  smtpSessionsOpen: new Gauge({
    name: 'mailservice_smtp_sessions',
    help: 'SMTP submission connections open now',
    registers: [registry],
  }),
  smtpMessages: new Counter({
    name: 'mailservice_smtp_messages_total',
    help: 'Messages submitted over SMTP and accepted (250 after DATA), by whether they were new or a repeated Message-ID',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  certificateExpiry: new Gauge({
    name: 'mailservice_tracking_certificate_expiry_seconds',
    help: "Each tracking domain's certificate expiry (not_after) as a Unix time, read at scrape time (docs/tracking-domains.md)",
    labelNames: ['domain'] as const,
    registers: [registry],
  }),
  partitions: new Gauge({
    name: 'mailservice_db_partitions',
    help: 'Range partitions of each time-partitioned table (docs/partitions.md), the default one not counted',
    labelNames: ['table'] as const,
    registers: [registry],
  }),
  partitionOldest: new Gauge({
    name: 'mailservice_db_partition_oldest_seconds',
    help: 'When the oldest range partition kept of each time-partitioned table starts, as a Unix time',
    labelNames: ['table'] as const,
    registers: [registry],
  }),
  partitionStrays: new Gauge({
    name: 'mailservice_db_partition_default_rows',
    help: 'Rows in the default partition of each time-partitioned table (ids no range holds), counted up to 10000; above 0 after an upgrade from random ids, else a partition was not made in time',
    labelNames: ['table'] as const,
    registers: [registry],
  }),
  smtpDataPastBound: new Counter({
    name: 'mailservice_smtp_data_past_bound_total',
    help: 'Pieces of DATA read past the bound on bytes held at once, after waiting 5 s for room: clients slow to send their DATA held it',
    registers: [registry],
  }),
  smtpRefusals: new Counter({
    name: 'mailservice_smtp_refusals_total',
    help: 'SMTP submission refusals by reason (auth, from, quota, size, recipients, malformed, nobody, unavailable, shutdown, too_many_connections, auth_timeout, data_timeout, protocol)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  /** the MX (apps/mx, docs/mx.md): served by the MX process on MX_METRICS_PORT */
  mxSessions: new Counter({
    name: 'mailservice_mx_sessions_total',
    help: 'MX connections opened',
    registers: [registry],
  }),
  mxMessages: new Counter({
    name: 'mailservice_mx_messages_total',
    help: 'Messages the MX accepted (250 after DATA), by outcome (delivered, held, report)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  mxRefusals: new Counter({
    name: 'mailservice_mx_refusals_total',
    help: 'MX refusals by reason (recipient, domain, rejected, size, recipients, dmarc, unavailable, protocol)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  mxSpam: new Counter({
    name: 'mailservice_mx_spam_total',
    help: 'Messages the MX held for their rspamd score over the route threshold',
    registers: [registry],
  }),
};

/** Sets the gauges of shared state from Redis and Postgres: queue depths, live and estimated message counts. */
async function readState(db: Db): Promise<void> {
  const [depths, live, estimated, oldest, expiries, partitions] = await Promise.all([
    queueDepths(),
    liveMessageCounts(db),
    estimatedMessageCounts(db),
    oldestDeferredSeconds(db),
    certificateExpiries(db),
    partitionStates(db),
  ]);
  metrics.partitionOldest.reset();
  for (const p of partitions) {
    metrics.partitions.set({ table: p.table }, p.partitions);
    if (p.oldestFromMs !== null) metrics.partitionOldest.set({ table: p.table }, p.oldestFromMs / 1000);
    metrics.partitionStrays.set({ table: p.table }, p.strays);
  }
  metrics.certificateExpiry.reset();
  for (const row of expiries) metrics.certificateExpiry.set({ domain: row.name }, row.not_after);
  metrics.oldestDeferred.set(Math.max(0, Math.round((oldest ?? 0) * 10) / 10));
  metrics.queueJobs.reset();
  for (const { queue: name, counts } of depths) for (const state of QUEUE_STATES) metrics.queueJobs.set({ queue: name, state }, counts[state] ?? 0);
  for (const row of live) metrics.messagesLive.set({ status: row.status }, row.count);
  metrics.messagesEstimate.reset();
  for (const row of estimated) metrics.messagesEstimate.set({ status: row.status }, row.count);
}

/**
 * The registry as Prometheus text. With `state` (the API, GET /metrics) the gauges of queue depths and message counts
 * are read first, at scrape time only; a worker reports its own counters and process figures.
 */
export async function scrape(state?: { db: Db }): Promise<string> {
  if (state) await readState(state.db);
  return registry.metrics();
}
export const contentType = registry.contentType;
