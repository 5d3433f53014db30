import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { scheduleDueSteps } from '../../apps/core/src/outreach/scheduler';
import { updateCampaign } from '../../apps/core/src/outreach/campaigns';
import { createWorkers } from '../../apps/worker/src/workers';
import { runTs } from '../helpers/processes';
import { useDelivery } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { addProspect, outreach } from './support';

/** Crash safety: a worker process killed between writing a step and committing it. No other worker runs until then. */
const worker = useDelivery();
const sink = new SmtpSink();
let workers: Worker[] = [];
beforeAll(() => sink.start());
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  worker.delivery.close();
  await sink.stop();
});

it('a worker killed mid-step leaves nothing behind: the step is written once, by the next worker', async () => {
  const { tenant, campaign } = await outreach({ smtp: sink.url, status: 'paused', mailbox: { daily_limit: 10, gap_seconds: 0 } });
  const id = await addProspect(tenant.account.id, campaign.id, { email: 'killed@reader.org' });
  await db().$transaction((tx) => updateCampaign(tx, campaign.id, { status: 'running' }));
  const dying = runTs('test/outreach/fixtures/die-mid-step.ts', [String(id), '1']);
  // a fresh tsx process compiles and loads the app first: on a loaded 2-core machine that alone took over 30 s once
  let written = false;
  await Promise.race([
    waitFor(() => (written = dying.stdout().includes('written, not committed')), { timeout: 120_000, interval: 100, what: 'the step written in the dying worker' }),
    dying.exited.then(() => {
      if (!written) throw new Error(`the dying worker exited before writing: ${dying.stdout()}${dying.stderr()}`);
    }),
  ]);
  const [pid, lost] = dying.stdout().split(':') as [string, string];
  expect(lost).toMatch(/^[0-9a-f-]{36}$/);
  // tsx runs the script in a child of its own: kill that very process, as a crash or the OOM killer would
  process.kill(Number(pid), 'SIGKILL');
  await dying.exited;
  // the lock went with the connection: the row and the mailbox slot of the dead worker were rolled back, and the
  // prospect is still due, so the next scheduler run and a live worker write the step
  workers = createWorkers({ db: db(), delivery: worker.delivery, queues: ['delivery', 'sequence'], concurrency: 5 });
  // the periodic schedule task, run by hand: until Postgres has noticed the dead connection the row is still locked
  // and the claim skips it; the next run takes it
  await waitFor(
    async () => {
      await scheduleDueSteps(db());
      return sink.to('killed@reader.org').length === 1;
    },
    { timeout: 15_000, interval: 200, what: 'the step from a live worker' },
  );
  const rows = await db().message.findMany({ where: { prospectId: id } });
  expect(rows).toHaveLength(1);
  expect(rows[0]!.id).not.toBe(lost);
  expect(await db().message.count({ where: { id: lost } })).toBe(0);
  expect((await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).sequenceCount).toBe(1);
  expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'writing', step: 1 });
}, 180_000);
