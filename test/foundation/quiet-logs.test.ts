import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, type Worker } from 'bullmq';
import { trackRequest } from '../../apps/api/src/middleware/request';
import { db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { logger } from '../../apps/core/src/logger';
import { dependencies } from '../../apps/core/src/outage';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { createWorkers } from '../../apps/worker/src/workers';
import { makeTenant } from '../helpers/factories';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { insertMessage, waitForStatus } from '../sending/helpers';

/**
 * docs/reliability.md, "Logs": an expected fault writes no error line, and a dependency's outage is one warn line when it
 * goes (and one info line when it is back), not a line per request, job attempt or reconnection.
 */
type Line = { level: 'error' | 'warn'; fields: Record<string, unknown>; msg: string };
let lines: Line[] = [];
let spies: jest.SpyInstance[] = [];
beforeEach(() => {
  lines = [];
  spies = (['error', 'warn'] as const).map((level) =>
    jest.spyOn(logger, level).mockImplementation(((fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg })) as never),
  );
});
afterEach(() => spies.forEach((s) => s.mockRestore()));

it("an expected 503 (with Retry-After) writes its access line below error; a 500 is an error line", async () => {
  const server = http.createServer((req, res) => {
    trackRequest(req, res, req.url!, () => req.url!);
    if (req.url === '/busy') res.setHeader('Retry-After', '5');
    res.statusCode = req.url === '/busy' ? 503 : 500;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    for (let i = 0; i < 5; i++) expect((await fetch(`${base}/busy`)).status).toBe(503);
    expect((await fetch(`${base}/broken`)).status).toBe(500);
    await waitFor(() => lines.some((l) => l.fields.url === '/broken'), { what: "the 500's line" });
    expect(lines.filter((l) => l.msg === 'request').map((l) => [l.level, l.fields.status])).toEqual([['error', 500]]);
  } finally {
    server.close();
  }
});

describe('the worker', () => {
  let workers: Worker[] = [];
  // the worker's delivery, as main.ts makes it; its SMTP pools close with the test's workers
  let delivery: Delivery | undefined;
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.close()));
    workers = [];
    delivery?.close();
  });

  it("reports Redis's loss of a job's keys or lock after an outage below error, and Sentinel's loss as the outage's one line", () => {
    workers = createWorkers({ db: db(), delivery: (delivery = createDelivery(db(), deliveryRegistrations())), queues: ['webhook'] });
    const worker = workers[0]!;
    for (let i = 0; i < 20; i++) worker.emit('error', new Error('All sentinels are unreachable. Retrying from scratch after 10ms.'));
    dependencies.up('redis');
    for (let i = 0; i < 20; i++) {
      // as BullMQ makes them: finishedErrors (a code), and the lock renewal's plain Error (lock-manager.ts)
      worker.emit('error', Object.assign(new Error(`Missing key for job ${i}. moveToFinished`), { code: ErrorCode.JobNotExist }));
      worker.emit('error', new Error(`could not renew lock for job ${i}`));
    }
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual(['redis is unreachable; waiting for it']);
    // anything else is still an error
    worker.emit('error', new Error('ERR unknown command'));
    expect(lines.filter((l) => l.level === 'error').map((l) => l.fields.err)).toEqual(['ERR unknown command']);
  });

  it("an SMTP server away for every attempt of a delivery is one warn line for the outage and one for the job's end", async () => {
    const tenant = await makeTenant({ smtp: `smtp://127.0.0.1:${await freePort()}` });
    workers = createWorkers({ db: db(), delivery: (delivery = createDelivery(db(), deliveryRegistrations())), queues: ['delivery'] });
    const { id } = await insertMessage(tenant, 'nobody-home@example.org');
    await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId: id }, { ...JOB_OPTIONS.delivery, attempts: 4, jobId: jobId.delivery(id), backoff: { type: 'fixed', delay: 50 } });
    await waitForStatus(id, ['failed'], 30_000);
    await waitFor(() => lines.some((l) => l.msg === 'job failed'), { what: "the job's last line" });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', `smtp server of mailbox ${tenant.mailbox.id} is unreachable; waiting for it`],
      ['warn', 'job failed'],
    ]);
  }, 40_000);
});
