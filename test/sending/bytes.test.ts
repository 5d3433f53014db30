import { db } from '../../apps/core/src/db';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

// the smallest budget: about one email of this test at a time (set before the worker reads its configuration)
process.env.WORKER_MAX_BYTES_IN_FLIGHT = String(1024 * 1024);

/** A worker bounds the bytes of email it holds on the wire, not only their number. */
const ctx = useApi();
const sink = useMail({ queues: ['delivery'], concurrency: 10 });

it('sends big emails one at a time under a 1 MB budget, small ones side by side, and delivers all of them', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  sink.dataDelayMs = 300;
  try {
    const attachment = Buffer.alloc(600 * 1024, 'x').toString('base64');
    const big = await as(ctx.api, tenant.token)
      .post('/api/v1/send')
      .send({ to: Array.from({ length: 6 }, (_, i) => `big${i}@example.org`), subject: 'Big', text: 'see attached', attachments: [{ filename: 'a.txt', content: attachment }] });
    expect(big.status).toBe(202);
    await waitFor(async () => ((await db().message.count({ where: { sendId: big.body.id, status: 'sent' } })) === 6 ? true : undefined), { timeout: 30_000, what: 'the six big emails' });
    // about 800 KB each: never two at once in a 1 MB budget
    expect(sink.dataMost).toBe(1);

    sink.dataMost = 0;
    const small = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: Array.from({ length: 6 }, (_, i) => `small${i}@example.org`), subject: 'Small', text: 'hi' });
    await waitFor(async () => ((await db().message.count({ where: { sendId: small.body.id, status: 'sent' } })) === 6 ? true : undefined), { timeout: 30_000, what: 'the six small emails' });
    expect(sink.dataMost).toBeGreaterThan(1);
  } finally {
    sink.dataDelayMs = 0;
  }
});
