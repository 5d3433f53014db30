import request from 'supertest';
import { createApp } from '../../apps/api/src/app';
import { Semaphore } from '../../apps/core/src/batch';
import { createDb, db, type Db } from '../../apps/core/src/db';
import { createDelivery, deliverMessage, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliverBatch } from '../../apps/core/src/delivery/dispatch';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { HOLDER, HOLDER_TTL_MS } from '../../apps/core/src/delivery/lease';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import type { DomainSigner } from '../../apps/core/src/domains/sending';
import { logger } from '../../apps/core/src/logger';
import { redis, rkey } from '../../apps/core/src/redis';
import { makeTenant } from '../helpers/factories';
import { PgProxy } from '../helpers/pg-proxy';
import { freePort } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';
import { insertMessage, writtenCopies } from './helpers';

const sink = new SmtpSink();
const proxy = new PgProxy();
let proxied: Db;
/** a worker's delivery behind the proxy, and one straight on the test database */
let behindProxy: Delivery;
let direct: Delivery;
beforeAll(async () => {
  await sink.start();
  await proxy.start();
  proxied = createDb(proxy.url());
  behindProxy = createDelivery(proxied, deliveryRegistrations());
  direct = createDelivery(db(), deliveryRegistrations());
});
afterAll(async () => {
  behindProxy.close();
  direct.close();
  await sink.stop();
  await proxied.$disconnect().catch(() => undefined);
  await proxy.stop();
});

it('answers 503 with Retry-After, not 500, while Postgres is unreachable', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const api = createApp(createDb(`postgresql://postgres@127.0.0.1:${await freePort()}/nowhere`));
  await api.start();
  try {
    const res = await request(api.app)
      .post('/api/v1/send')
      .set('Authorization', `Bearer ${tenant.token}`)
      .send({ to: 'reader@example.org', subject: 'Hi', text: 'x' });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/unavailable/) });
  } finally {
    await api.stop();
  }
});

it('keeps a "sent" mark Postgres did not take and writes it once Postgres is back: the row is not sent again', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const { id } = await insertMessage(tenant, 'outage@example.org');
  // Postgres goes away while the SMTP server takes the message: the claim went through, the mark cannot
  sink.rule = (stage) => {
    if (stage === 'data') proxy.cutOff();
    return undefined;
  };
  const delivering = deliverMessage(behindProxy, id, { lastAttempt: false });
  const settled = jest.fn();
  void delivering.then(settled, settled);
  // until the mark was tried and refused (a worker without the fix gives up there and the call settles)
  const debug = jest.spyOn(logger, 'debug');
  await waitFor(() => settled.mock.calls.length > 0 || debug.mock.calls.some(([, msg]) => String(msg).includes('could not write the sent mark')), {
    timeout: 20_000,
    what: 'the refused mark',
  });
  debug.mockRestore();
  expect(sink.to('outage@example.org')).toHaveLength(1);
  expect(settled).not.toHaveBeenCalled();
  expect((await db().message.findUniqueOrThrow({ where: { id } })).status).toBe('sending');
  sink.rule = undefined;
  proxy.restore();
  expect(await delivering).toMatchObject({ kind: 'sent' });
  expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'sent', lockedUntil: null });
  // a second delivery of the row (a job run again) finds it final
  expect(await deliverMessage(direct, id, { lastAttempt: false })).toEqual({ kind: 'finished', status: 'sent' });
  expect(sink.to('outage@example.org')).toHaveLength(1);
});

it('fails a dispatch batch whose claim Postgres did not answer, sending nothing, and delivers it once when run again', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const ids = [...(await writtenCopies(tenant, ['claim-outage1@example.org', 'claim-outage2@example.org'])).values()];
  const batch = ids.map((id) => ({ id, notBefore: null }));
  proxy.cutOff();
  try {
    await expect(deliverBatch(behindProxy, batch)).rejects.toThrow();
  } finally {
    proxy.restore();
  }
  expect(sink.to('claim-outage1@example.org')).toHaveLength(0);
  for (const id of ids) expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'queued', attempts: 0 });
  // the job's next run (BullMQ retries a failed dispatch job)
  expect(await deliverBatch(behindProxy, batch)).toEqual({ sent: 2, handedOn: 0 });
  expect(sink.to('claim-outage1@example.org')).toHaveLength(1);
  expect(sink.to('claim-outage2@example.org')).toHaveLength(1);
});

it("gives back a batch's row slots when its emails fail before the wire, and the worker takes those rows again", async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  const ids = [...(await writtenCopies(tenant, ['slot1@example.org', 'slot2@example.org'])).values()];
  const batch = ids.map((id) => ({ id, notBefore: null }));
  // Postgres gone just as the signing keys are read (their cache ran out during an outage): claimed, nothing sent
  const keysAway = { sign: () => Promise.reject(new Error('the signing keys could not be read')) } as unknown as DomainSigner;
  const worker: Delivery = { ...direct, claims: new FastClaims(db(), direct.kinds), rows: new Semaphore(2), signer: keysAway };
  await expect(deliverBatch(worker, batch)).rejects.toThrow(/signing keys/);
  // both slots back: a batch that needs the whole capacity does not wait for ever
  const freed = await Promise.race([worker.rows.acquire(2).then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 100))]);
  expect(freed).toBe(true);
  worker.rows.release(2);
  for (const id of ids) expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'sending', lockedBy: HOLDER });

  // once their lease ran out, the batch run again hands the rows on (the batched claim takes no `sending` row); their
  // own jobs in this worker, which let them go unmarked, take them again
  await db().message.updateMany({ where: { id: { in: ids } }, data: { lockedUntil: new Date(Date.now() - 1_000) } });
  const healthy: Delivery = { ...worker, signer: direct.signer };
  expect(await deliverBatch(healthy, batch)).toEqual({ sent: 0, handedOn: 2 });
  for (const id of ids) expect(await deliverMessage(healthy, id, { lastAttempt: false })).toMatchObject({ kind: 'sent' });
  expect(sink.to('slot1@example.org')).toHaveLength(1);
  expect(sink.to('slot2@example.org')).toHaveLength(1);
});

describe('a lease that ran out while Postgres was away', () => {
  const lease = process.env.DELIVERY_LEASE_SECONDS;
  afterEach(() => {
    if (lease === undefined) delete process.env.DELIVERY_LEASE_SECONDS;
    else process.env.DELIVERY_LEASE_SECONDS = lease;
  });

  it("is not taken by the worker's next job while the worker holds the row, its mark waiting: sent once", async () => {
    // a 1 s lease: it runs out while the mark waits, as a 30 s one does behind PgBouncer's 15 s login retry
    process.env.DELIVERY_LEASE_SECONDS = '1';
    const tenant = await makeTenant({ smtp: sink.url });
    const [id] = [...(await writtenCopies(tenant, ['held-through@example.org'])).values()];
    sink.rule = (stage) => {
      if (stage === 'data') proxy.cutOff();
      return undefined;
    };
    const debug = jest.spyOn(logger, 'debug');
    const delivering = deliverMessage(behindProxy, id!, { lastAttempt: false });
    try {
      await waitFor(() => debug.mock.calls.some(([, msg]) => String(msg).includes('could not write the sent mark')), { timeout: 20_000, what: 'the refused mark' });
    } finally {
      debug.mockRestore();
      sink.rule = undefined;
    }
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id: id! } })).lockedUntil! < new Date(), { what: 'the lease to run out' });
    // the same worker's other jobs (a dispatch job run again, the reconciler's job for the row), on a connection
    // Postgres answers before the mark is written
    const sameWorker: Delivery = { ...behindProxy, db: db(), claims: new FastClaims(db(), direct.kinds) };
    expect(await deliverMessage(sameWorker, id!, { lastAttempt: false })).toMatchObject({ kind: 'busy' });
    expect(await deliverBatch(sameWorker, [{ id: id!, notBefore: null }])).toEqual({ sent: 0, handedOn: 1 });
    expect(sink.to('held-through@example.org')).toHaveLength(1);

    proxy.restore();
    expect(await delivering).toMatchObject({ kind: 'sent' });
    expect(await db().message.findUniqueOrThrow({ where: { id: id! } })).toMatchObject({ status: 'sent', attempts: 1 });
    expect(await deliverMessage(sameWorker, id!, { lastAttempt: false })).toEqual({ kind: 'finished', status: 'sent' });
    expect(sink.to('held-through@example.org')).toHaveLength(1);
  });

  it("is not taken from another worker while its beacon lives, and is taken back once the beacon is gone", async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const [id] = [...(await writtenCopies(tenant, ['other-holder@example.org'])).values()];
    const other = 'worker-b:42:beef';
    await db().message.update({ where: { id: id! }, data: { status: 'sending', attempts: 1, lockedUntil: new Date(Date.now() - 60_000), lockedBy: other } });
    await redis().set(rkey('holders', other), '1', 'PX', HOLDER_TTL_MS);
    expect(await deliverMessage(direct, id!, { lastAttempt: false })).toMatchObject({ kind: 'busy' });
    expect(await deliverBatch(direct, [{ id: id!, notBefore: null }])).toEqual({ sent: 0, handedOn: 1 });
    expect(sink.to('other-holder@example.org')).toHaveLength(0);
    expect(await db().message.findUniqueOrThrow({ where: { id: id! } })).toMatchObject({ status: 'sending', lockedBy: other, attempts: 1 });

    // the other worker died: its beacon is gone, and the row is taken back
    await redis().del(rkey('holders', other));
    expect(await deliverMessage(direct, id!, { lastAttempt: false })).toMatchObject({ kind: 'sent' });
    expect(await db().message.findUniqueOrThrow({ where: { id: id! } })).toMatchObject({ status: 'sent', attempts: 2, lockedBy: HOLDER });
    expect(sink.to('other-holder@example.org')).toHaveLength(1);
  });
});
