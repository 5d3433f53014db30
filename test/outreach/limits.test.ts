import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createWorkers } from '../../apps/worker/src/workers';
import { as, useApi } from '../helpers/api';
import { runTs, type Proc } from '../helpers/processes';
import { useDelivery } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { outreach } from './support';

/**
 * The per-mailbox daily cap and gap hold across worker processes: a real second worker process (`tsx
 * apps/worker/src/main.ts`, as `npm run worker` starts it) and the workers of this process consume the same queues.
 */
const ctx = useApi();
const worker = useDelivery();
const sink = new SmtpSink();
let workers: Worker[] = [];
let child: Proc | undefined;

beforeAll(async () => {
  await sink.start();
  child = runTs('apps/worker/src/main.ts', [], { WORKER_CONCURRENCY: '5', LOG_LEVEL: 'info' });
  await waitFor(() => {
    if (child!.child.exitCode !== null) throw new Error(`worker exited: ${child!.stderr()}`);
    return child!.stdout().includes('worker started');
  }, { timeout: 30_000, what: 'the second worker process to start' });
  workers = createWorkers({ db: db(), delivery: worker.delivery, queues: ['delivery', 'sequence'], concurrency: 5 });
}, 40_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  worker.delivery.close();
  if (child && child.child.exitCode === null) {
    child.child.kill('SIGTERM');
    await child.exited;
  }
  await sink.stop();
}, 30_000);

it('sends no more than daily_limit a day, gap_seconds apart, with two worker processes racing', async () => {
  const { tenant, campaign } = await outreach({
    smtp: sink.url,
    mailbox: { daily_limit: 4, gap_seconds: 1 },
    steps: [{ subject: 'Hi {{name}}', body: 'one', delay_hours: 0 }],
  });
  const prospects = Array.from({ length: 9 }, (_, i) => ({ email: `cap${i}@reader.org`, name: `N${i}` }));
  const added = await as(ctx.api, tenant.token).post('/api/v1/prospects').send({ campaign: campaign.id, prospects });
  expect(added.body.added).toBe(9);

  await sink.waitForCount(4, 20_000);
  // the other five wait for the next UTC day
  const tomorrow = new Date();
  tomorrow.setUTCHours(24, 0, 0, 0);
  await waitFor(async () => (await db().prospect.count({ where: { campaignId: campaign.id, status: 'ready', nextAt: tomorrow } })) === 5, {
    timeout: 15_000,
    what: 'five prospects deferred to tomorrow',
  });
  const written = await db().message.findMany({ where: { mailboxId: tenant.mailbox.id }, orderBy: { notBefore: 'asc' } });
  expect(written).toHaveLength(4);
  // each row records the mailbox slot its step claimed: a gap of at least gap_seconds between any two
  for (let i = 1; i < written.length; i++) {
    expect(written[i]!.notBefore!.getTime() - written[i - 1]!.notBefore!.getTime()).toBeGreaterThanOrEqual(1000);
  }
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
  expect(mailbox).toMatchObject({ sequenceCount: 4, sequenceLastAt: written[3]!.notBefore });
  await waitFor(async () => (await db().message.count({ where: { mailboxId: tenant.mailbox.id, status: 'sent' } })) === 4, { what: 'four sent' });
  expect(sink.messages).toHaveLength(4);
  expect(child!.child.exitCode).toBeNull();
}, 60_000);
