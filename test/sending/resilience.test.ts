import { spawn } from 'node:child_process';
import net from 'node:net';
import Redis from 'ioredis';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { Worker } from 'bullmq';
import { createApp } from '../../apps/api/src/app';
import { db } from '../../apps/core/src/db';
import { EXPIRED_GRACE_MS } from '../../apps/core/src/delivery/reconcile';
import { QUEUE, jobId, queue, queueConnection, queuePrefix } from '../../apps/core/src/queues';
import { deliveryProcessor } from '../../apps/worker/src/processors/delivery';
import { maintenanceTasks } from '../../apps/worker/src/processors/maintenance';
import { as } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { freePort } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { insertMessage, runProcess, waitForStatus, type OwnProcess } from './helpers';

jest.setTimeout(60_000);

const sink = new SmtpSink();
const children: OwnProcess[] = [];
const workers: Worker[] = [];
const deliveries: Delivery[] = [];
beforeAll(() => sink.start());
// each test starts its own workers and processes, so no job of one test is taken by another's
afterEach(async () => {
  for (const proc of children.splice(0)) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await Promise.all(workers.splice(0).map((w) => w.close()));
});
afterAll(async () => {
  for (const delivery of deliveries) delivery.close();
  await sink.stop();
});

/** A delivery worker in this process, as after a restart; checks for stalled jobs every second. */
function startWorker(): Worker {
  const delivery = createDelivery(db(), deliveryRegistrations());
  deliveries.push(delivery);
  const worker = new Worker(QUEUE.delivery, deliveryProcessor(delivery), { connection: queueConnection(), prefix: queuePrefix(), stalledInterval: 1000 });
  workers.push(worker);
  return worker;
}

describe('nothing accepted is lost', () => {
  it('accepts a send while Redis is unreachable, and the reconciler queues it once Redis is back', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const closedPort = await freePort();
    const port = await freePort();
    const api = runProcess('test/sending/fixtures/api-process.ts', { PORT: String(port), REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    children.push(api);
    await waitFor(() => api.stdout().includes('listening') || api.child.exitCode !== null, { timeout: 30_000, what: 'the API process' });

    const res = await fetch(`http://127.0.0.1:${port}/api/v1/send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ to: 'kept@example.org', subject: 'Kept', text: 'x' }),
    });
    expect(res.status).toBe(202);
    const answer = (await res.json()) as { messages: { id: string }[] };
    const id = answer.messages[0]!.id;
    // the answer did not wait for Redis: the failed add clears the row's enqueued mark just after it
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id } })).enqueuedAt === null, { what: 'the mark cleared' });
    expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'queued', enqueuedAt: null });
    expect(await queue(QUEUE.delivery).getJob(jobId.delivery(id))).toBeUndefined();

    // concurrent sends are answered at once too, and share one Redis attempt
    const started = Date.now();
    const parallel = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        fetch(`http://127.0.0.1:${port}/api/v1/send`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ to: [`p${i}a@example.org`, `p${i}b@example.org`], subject: 'Kept', text: 'x' }),
        }),
      ),
    );
    expect(parallel.map((r) => r.status)).toEqual(parallel.map(() => 202));
    expect(Date.now() - started).toBeLessThan(5_500);
    const ids = [id];
    for (const res of parallel) ids.push(...((await res.json()) as { messages: { id: string }[] }).messages.map((m) => m.id));
    await waitFor(async () => (await db().message.count({ where: { id: { in: ids }, enqueuedAt: null } })) === 13, { what: 'the 13 marks cleared' });
    api.child.kill('SIGTERM');

    startWorker();
    expect(await maintenanceTasks(db()).reconcile()).toMatchObject({ requeued: 13 });
    for (const messageId of ids) await waitForStatus(messageId, ['sent']);
    expect(sink.to('kept@example.org')).toHaveLength(1);
    expect(sink.to('p5b@example.org')).toHaveLength(1);
    expect(await maintenanceTasks(db()).reconcile()).toMatchObject({ requeued: 0 });
  });

  it('answers 202 once the rows are committed, without waiting for Redis to take the jobs; a late Redis still gets them', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const redisPort = await freePort();
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const control = new Redis(redisPort, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      await waitFor(() => control.ping().catch(() => null), { what: 'the private Redis' });
      const port = await freePort();
      const api = runProcess('test/sending/fixtures/api-process.ts', { PORT: String(port), REDIS_URL: `redis://127.0.0.1:${redisPort}` });
      children.push(api);
      await waitFor(() => api.stdout().includes('listening') || api.child.exitCode !== null, { timeout: 30_000, what: 'the API process' });
      const send = (subject: string) =>
        fetch(`http://127.0.0.1:${port}/api/v1/send`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ to: 'late@example.org', subject, text: 'x' }),
        });
      expect((await send('warm')).status).toBe(202);

      // Redis holds every write for 3 s: the job's add waits, and gives the rows to the reconciler after its 0.5 s
      await control.call('CLIENT', 'PAUSE', '3000', 'WRITE');
      const res = await send('Late');
      expect(res.status).toBe(202);
      const id = ((await res.json()) as { messages: { id: string }[] }).messages[0]!.id;
      // answered before Redis took the job or the add gave up: the row still carries its enqueued mark, and no job
      const jobKey = `${queuePrefix()}:${QUEUE.delivery}:${jobId.delivery(id)}`;
      expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'queued', enqueuedAt: expect.any(Date) });
      expect(await control.exists(jobKey)).toBe(0);
      // then the add gives up: the mark is cleared for the reconciler; and once Redis writes again the job is there too
      await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id } })).enqueuedAt === null, { what: 'the mark cleared' });
      await waitFor(async () => (await control.exists(jobKey)) === 1, { what: 'the late job' });
    } finally {
      control.disconnect();
      redis.kill('SIGKILL');
      // their jobs went to the private Redis: the next tests' reconciler is not to queue them in the shared one
      await db().message.updateMany({ where: { accountId: tenant.account.id }, data: { status: 'cancelled' } });
    }
  });

  it('delivers a message whose worker was killed mid-job, once, after a worker starts again', async () => {
    // an SMTP server that accepts the connection and never greets: the worker hangs inside the job
    const hanging = net.createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const port = (hanging.address() as net.AddressInfo).port;
      const tenant = await makeTenant({ smtp: `smtp://127.0.0.1:${port}` });
      const worker = runProcess('test/sending/fixtures/delivery-worker.ts', { DELIVERY_LEASE_SECONDS: '2' });
      children.push(worker);
      await waitFor(() => worker.stdout().includes('ready'), { timeout: 30_000, what: 'the worker process' });
      const { id } = await insertMessage(tenant, 'survivor@example.org');
      await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: id }, { jobId: jobId.delivery(id), attempts: 8 });
      await waitForStatus(id, ['sending']);
      worker.child.kill('SIGKILL');
      await worker.exited;

      // the mailbox is fixed meanwhile; the restarted worker picks the stalled job up after the lease
      await db().mailbox.update({ where: { id: tenant.mailbox.id }, data: { smtpPort: sink.portNumber } });
      startWorker();
      const sent = await waitForStatus(id, ['sent'], 20_000);
      expect(sent.attempts).toBe(2);
      expect(sink.to('survivor@example.org')).toHaveLength(1);
    } finally {
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('queues an accepted send whose job never reached Redis (the API died after commit) once its mark is stale', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const api = createApp(db());
    await api.start();
    try {
      const res = await as(api, tenant.token).post('/api/v1/send').send({ to: 'crash@example.org', subject: 'Hi', text: 'x' });
      expect(res.status).toBe(202);
      const id = res.body.messages[0].id as string;
      // as if the process died between the commit and queueing: the row is marked, the job is not there
      // (the answer does not wait for the job: it is there a moment later)
      const job = await waitFor(() => queue(QUEUE.delivery).getJob(jobId.delivery(id)), { what: 'the job' });
      await job.remove();
      expect(await maintenanceTasks(db()).reconcile()).toMatchObject({ requeued: 0 });
      await db().message.update({ where: { id }, data: { enqueuedAt: new Date(Date.now() - 10 * 60_000) } });
      expect(await maintenanceTasks(db()).reconcile()).toMatchObject({ requeued: 1 });
      startWorker();
      await waitForStatus(id, ['sent']);
      expect(sink.to('crash@example.org')).toHaveLength(1);
    } finally {
      await api.stop();
    }
  });

  it('re-queues a row left sending by a dead worker whose job is gone, and one whose job finished without it', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const orphan = await insertMessage(tenant, 'orphan@example.org');
    await db().message.update({ where: { id: orphan.id }, data: { status: 'sending', lockedUntil: new Date(Date.now() - EXPIRED_GRACE_MS - 1000), enqueuedAt: new Date(Date.now() - 3600_000) } });
    // a job that completed while its row said there was nothing to do, and the row later reads unfinished
    // (as when a worker's last write to the row was lost)
    const finished = await insertMessage(tenant, 'finished@example.org');
    await db().message.update({ where: { id: finished.id }, data: { status: 'cancelled' } });
    const job = await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: finished.id }, { jobId: jobId.delivery(finished.id) });
    startWorker();
    await waitFor(async () => (await job.getState()) === 'completed');
    await db().message.update({ where: { id: finished.id }, data: { status: 'queued', enqueuedAt: new Date(Date.now() - 3600_000) } });

    expect(await maintenanceTasks(db()).reconcile()).toMatchObject({ requeued: 2 });
    await waitForStatus(orphan.id, ['sent']);
    await waitForStatus(finished.id, ['sent']);
    expect(sink.to('orphan@example.org')).toHaveLength(1);
  });
});
