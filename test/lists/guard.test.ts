import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createWorkers } from '../../apps/worker/src/workers';
import { useApi } from '../helpers/api';
import { useDelivery } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { address, confirmationMessages, listFixture } from './support';

const ctx = useApi();
const worker = useDelivery();
const sink = new SmtpSink();
let workers: Worker[] = [];

beforeAll(async () => {
  // no manual registration: createWorkers registers the guards a worker process needs
  await sink.start();
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  worker.delivery.close();
  await sink.stop();
});

describe('the confirmation email\'s pre-send guard', () => {
  it('cancels a queued confirmation whose person left or was confirmed meanwhile, and sends the others', async () => {
    const f = await listFixture(ctx.api, { smtp: sink.url });
    const [left, confirmedMeanwhile, waiting] = [address(), address(), address()];
    for (const email of [left, confirmedMeanwhile, waiting]) expect((await f.subscribe({ email })).body.status).toBe('pending');
    await f.unsubscribe({ email: left });
    await f.subscribe({ email: confirmedMeanwhile, confirmed: true });
    // only now does a worker pick up the three queued emails
    workers = createWorkers({ db: db(), delivery: worker.delivery, queues: ['delivery'], concurrency: 5 });
    await waitFor(() => sink.to(waiting)[0], { timeout: 15_000, what: 'the waiting person\'s email' });
    const status = async (email: string) => (await confirmationMessages(email))[0]!.status;
    // the worker marks a message sent after the server's answer, so the sink may hold it a moment before the row says so
    await waitFor(async () => (await status(left)) === 'cancelled' && (await status(confirmedMeanwhile)) === 'cancelled'
      && (await status(waiting)) === 'sent');
    const cancelled = await confirmationMessages(left);
    expect(cancelled[0]!.lastError).toBe('the subscriber is unsubscribed');
    expect(sink.to(left)).toHaveLength(0);
    expect(sink.to(confirmedMeanwhile)).toHaveLength(0);
    expect(await db().message.count({ where: { subscriberId: { not: null }, status: 'sent' } })).toBe(1);
  });
});
