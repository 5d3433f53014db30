import request from 'supertest';
import { createApp } from '../../apps/api/src/app';
import { createDb, db, type Db } from '../../apps/core/src/db';
import { createDelivery, deliverBatch, deliverMessage, type Delivery } from '../../apps/core/src/delivery/deliver';
import { productionGuards } from '../../apps/core/src/delivery/production-guards';
import { logger } from '../../apps/core/src/logger';
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
  behindProxy = createDelivery(proxied, productionGuards());
  direct = createDelivery(db(), productionGuards());
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
