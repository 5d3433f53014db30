import type { Job } from 'bullmq';
import type { JobPayloads } from '../../../core/src/queues';
import type { Db } from '../../../core/src/db';
import { scheduleDueSteps } from '../../../core/src/outreach/scheduler';
import { reconcileDeliveries } from '../../../core/src/delivery/reconcile';
import { rebuildLostJobs } from '../../../core/src/recovery';
import { deleteExpiredIdempotency } from '../../../core/src/idempotency';
import { queueDueLinkChecks } from '../../../core/src/links/schedule';
import { dropOldContent, dropOldRecords } from '../../../core/src/retention';
import { dropOldAuditEntries } from '../../../core/src/audit/retention';
import { requeueImports } from '../../../core/src/imports';
import { recheckDueDomains } from '../../../core/src/domains/schedule';
import { runDueSeries } from '../../../core/src/lifecycle/series';
import { recheckDueTrackingDomains } from '../../../core/src/tracking-domains/schedule';
import { ensurePartitions } from '../../../core/src/partitions';

/** Housekeeping over `db`, dispatched by task. Each task is idempotent: running it twice or on two workers is harmless. */
export const maintenanceTasks = (db: Db): Record<JobPayloads['maintenance']['task'], () => Promise<unknown>> => ({
  // re-queue messages stored but never queued (Redis was down, a crash between commit and enqueue, a dead worker), and
  // rebuild the webhook retries and broadcast runs Redis lost, from their rows (docs/reliability.md)
  reconcile: async () => ({ ...(await reconcileDeliveries(db)), rebuilt: await rebuildLostJobs(db) }),
  // claim prospects whose next_at is due and queue their step
  schedule: () => scheduleDueSteps(db),
  // drop idempotency records older than 24 hours
  cleanup: () => deleteExpiredIdempotency(db),
  // queue the link checks that are due (a page given with agreed, a placed link's re-check)
  links: () => queueDueLinkChecks(db),
  // RETENTION_DAYS: finished emails lose their bodies and attachments, their rows stay; the other growing tables lose
  // their old rows (MESSAGE_ROWS_DAYS for the emails' rows themselves); AUDIT_RETENTION_DAYS: old audit entries
  retention: async () => ({ content: await dropOldContent(db), records: await dropOldRecords(db), audit: await dropOldAuditEntries(db) }),
  // queue the imports whose job is gone (Redis lost it, or it was never queued); a live job is left alone
  imports: () => requeueImports(db),
  // check the sending domains that are due (DOMAIN_RECHECK_HOURS after their last check; a new one at once)
  domains: () => recheckDueDomains(db),
  // write the lists' welcome-series steps that are due (claimed from series_runs, Postgres's truth)
  series: () => runDueSeries(db),
  // check the tracking domains that are due: their CNAME, a certificate to order, a renewal, a retry (docs/tracking-domains.md)
  'tracking-domains': () => recheckDueTrackingDomains(db),
  // make the time partitions of messages, attempts and events for the current PARTITION_INTERVAL and three ahead
  partitions: () => ensurePartitions(db),
});

/** How often each task runs (apps/core/src/housekeeping/index.ts: a timer in each worker, one at a time by advisory lock). */
export const MAINTENANCE_EVERY_MS: Record<JobPayloads['maintenance']['task'], number> = {
  reconcile: 5_000,
  schedule: 5_000,
  cleanup: 3_600_000,
  links: 5_000,
  retention: 3_600_000,
  imports: 10_000,
  domains: 5_000,
  series: 5_000,
  'tracking-domains': 5_000,
  partitions: 3_600_000,
};

export function maintenanceProcessor(db: Db) {
  const tasks = maintenanceTasks(db);
  return (job: Job<JobPayloads['maintenance']>): Promise<unknown> => tasks[job.data.task]();
}
