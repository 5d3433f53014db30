import { config } from '../../core/src/config';
import { db } from '../../core/src/db';
import { startInboundReader } from '../../core/src/inbound/reader';
import { collectProcessMetrics } from '../../core/src/metrics';
import { serveWorkerMetrics } from '../../core/src/metrics/worker-server';
import { createDelivery, type Delivery } from '../../core/src/delivery/deliver';
import { deliveryRegistrations } from '../../core/src/email-kinds';
import { SandboxSink } from '../../core/src/sandbox/sink';
import { logger } from '../../core/src/logger';
import { tuneRuntime } from '../../core/src/runtime';
import { onShutdown } from '../../core/src/shutdown';
import { preflight } from '../../core/src/startup';
import { startDispatcher } from '../../core/src/webhooks/dispatch';
import { startHolderBeacon } from '../../core/src/delivery/lease';
import type { Worker } from 'bullmq';
import type { Housekeeping } from '../../core/src/housekeeping';
import { createWorkers, startMaintenance } from './workers';
import { Verifier } from '../../core/src/verify';

async function main(): Promise<void> {
  tuneRuntime();
  collectProcessMetrics();
  // what is running, filled in as it starts: a SIGTERM at any moment stops what there is
  let workers: Worker[] = [];
  let delivery: Delivery | undefined;
  let housekeeping: Housekeeping | undefined;
  let dispatcher: { stop(): Promise<void> } | undefined;
  let inbound: { stop(): Promise<void> } | undefined;
  let metricsServer: Awaited<ReturnType<typeof serveWorkerMetrics>> | undefined;
  let stopBeacon: (() => void) | undefined;

  // SIGTERM: take no new jobs, let the in-flight ones finish, close connections, exit 0; registered before anything is
  // awaited, so no signal can find the process without them
  onShutdown('worker', async () => {
    await dispatcher?.stop();
    // jobs that only wait on other jobs (a broadcast's run) hand themselves back; deliveries in flight finish
    for (const w of workers) w.cancelAllJobs('the worker is stopping');
    await Promise.all([...workers.map((w) => w.close()), housekeeping?.stop(), inbound?.stop()]);
    // every row it held is marked or handed back: its beacon can go
    stopBeacon?.();
    metricsServer?.close();
    delivery?.close();
  });

  await preflight('worker');
  // the rows this process claims name it; its beacon tells the reconciler it lives however long Postgres is away
  stopBeacon = startHolderBeacon();
  // delivery's parts, built once here and passed down (createDelivery): the kinds of email (their links, pre-send guards
  // and what follows their end) and mailbox logins the domains register (email-kinds), the claims and "sent" marks
  // all its jobs share, the lease heartbeat, the SMTP pools, the queueing of a broadcast's copies, the bounds on bytes
  // and rows in flight (a test runs this file as a process: test/sending/wiring.test.ts)
  // the process's one database handle, given to every part below
  const database = db();
  delivery = createDelivery(database, deliveryRegistrations(), { sandbox: new SandboxSink() });
  // address verification for the imports that ask for it: the disposable domains, the resolver, the mailbox probe
  workers = createWorkers({ db: database, delivery, verifier: new Verifier() });
  housekeeping = startMaintenance(database);
  // the event outbox's fan-out to webhook jobs
  dispatcher = startDispatcher(database);
  // replies, out-of-office, bounces and complaints from each mailbox's IMAP INBOX
  inbound = startInboundReader(database);
  const metricsPort = config().workerMetricsPort;
  if (metricsPort !== null) metricsServer = await serveWorkerMetrics(metricsPort);
  logger.info({ queues: workers.map((w) => w.name), metricsPort }, 'worker started');
}

void main();
