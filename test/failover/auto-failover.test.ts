import { Worker } from 'bullmq';
import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { createAccount } from '../../apps/core/src/accounts';
import { createKey } from '../../apps/core/src/auth/keys';
import { closeClient, createDb, rawQuery, type Db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { logger } from '../../apps/core/src/logger';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { migrate } from '../../apps/core/src/migrate';
import { QUEUE, queueConnection, queuePrefix } from '../../apps/core/src/queues';
import { deliveryProcessor } from '../../apps/worker/src/processors/delivery';
import { AutoFailover } from '../helpers/pg-auto-failover';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

/**
 * pg_auto_failover (docs/deploy.md, "Postgres with a standby"), the fault suite's `pg-failover` made short for CI: a
 * monitor, a primary and a secondary of Debian's postgresql-15-auto-failover; the API and a delivery worker on a
 * DATABASE_URL listing both nodes; the primary's processes SIGKILLed under 100 sends. Every accepted send is delivered,
 * none twice; the API accepts again within 30 s of the promotion, without a restart; one warn and one info line.
 */
jest.setTimeout(300_000);

// fixed ports below Linux's ephemeral range (32768-60999), so no connection of another test can hold them
const formation = new AutoFailover({ monitor: 21420, nodes: [21421, 21422] });
const sink = new SmtpSink();
let db: Db | undefined;
let api: ApiApp | undefined;
let worker: Worker | undefined;
let delivery: Delivery | undefined;

beforeAll(async () => {
  await Promise.all([formation.create(), sink.start()]);
  await migrate(formation.url);
  db = createDb(formation.url, 6, false);
  api = createApp(db);
  await api.start();
  delivery = createDelivery(db, deliveryRegistrations());
  worker = new Worker(QUEUE.delivery, deliveryProcessor(delivery), { connection: queueConnection(), prefix: queuePrefix(), concurrency: 10 });
});

afterAll(async () => {
  await worker?.close();
  delivery?.close();
  await api?.stop();
  if (db) await closeClient(db);
  await sink.stop();
  await formation.destroy();
});

/** One keyed send, repeated after a 503 (the failover) until it is accepted: its ids and when. */
async function send(token: string, i: number): Promise<{ ids: string[]; at: number; statuses: number[] }> {
  const statuses: number[] = [];
  for (;;) {
    const res = await request(api!.app)
      .post('/api/v1/send')
      .set('Authorization', `Bearer ${token}`)
      .set('Idempotency-Key', `auto-failover-${i}`)
      .send({ to: `reader${i}@example.org`, subject: `Failover ${i}`, text: 'Hello through a failover.' });
    statuses.push(res.status);
    if (res.status === 202) return { ids: (res.body as { messages: { id: string }[] }).messages.map((m) => m.id), at: Date.now(), statuses };
    if (res.status !== 503 || statuses.length > 300) throw new Error(`send ${i}: ${res.status} ${res.text}`);
    expect(res.headers['retry-after']).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

it('delivers every send accepted through a pg_auto_failover failover once, accepting again soon after the promotion', async () => {
  const account = await createAccount(db!, { name: 'failover' });
  const mailbox = await createMailbox(db!, { account: account.id, address: 'failover@example.com', name: 'Failover', smtp: sink.url, daily_limit: 100_000, gap_seconds: 0 });
  const { token } = await createKey(db!, { account: account.id, mailbox: mailbox.id, name: 'failover', daily_limit: 100_000 });
  const warn = jest.spyOn(logger, 'warn');
  const info = jest.spyOn(logger, 'info');

  const before = await Promise.all(Array.from({ length: 80 }, (_, i) => send(token, i)));
  await sink.waitForCount(20, 60_000);
  await formation.kill(1);
  const killedAt = Date.now();
  const duringSends = Promise.all(Array.from({ length: 20 }, (_, i) => send(token, 1_000 + i)));
  await waitFor(() => formation.acceptsWrites(2).catch(() => false), { timeout: 90_000, interval: 100, what: 'the promotion of node2' });
  const promotedAt = Date.now();
  const during = await duringSends;

  const ids = [...before, ...during].flatMap((s) => s.ids);
  expect(ids).toHaveLength(100);
  const received = () => sink.messages.map((m) => m.parsed.messageId!.slice(1).split('@')[0]!);
  await waitFor(() => new Set(received()).size >= ids.length, { timeout: 120_000, what: 'every accepted send delivered' });
  expect(new Set(received())).toEqual(new Set(ids));
  // the sends made meanwhile were refused (503, Retry-After) until a primary took writes, then accepted
  const firstAccepted = Math.min(...during.map((s) => s.at));
  expect(firstAccepted - promotedAt).toBeLessThan(30_000);
  expect(during.some((s) => s.statuses.includes(503))).toBe(true);
  expect(promotedAt - killedAt).toBeLessThan(60_000);
  // every row marked sent on the new primary, none sent twice
  await waitFor(async () => (await rawQuery<{ n: number }>(db!, `SELECT count(*)::int AS n FROM messages WHERE status = 'sent'`))[0]!.n === 100, { timeout: 60_000, what: 'every row marked sent' });
  expect(received()).toHaveLength(new Set(received()).size);
  expect((await rawQuery<{ port: number }>(db!, "SELECT current_setting('port')::int AS port"))[0]!.port).toBe(formation.ports.nodes[1]);

  // one warn line for the lost primary, one info line for the new one
  const lines = (spy: jest.SpyInstance) => spy.mock.calls.filter((c) => /^postgres /.test(String(c[1] ?? c[0])));
  // a second outage line says which error made it, in order with the first and the return (once seen in CI under load)
  const ordered = (spy: jest.SpyInstance) => spy.mock.calls.map((c, i) => ({ at: spy.mock.invocationCallOrder[i]!, line: c[1], detail: c[0] }));
  const said = () => JSON.stringify([...ordered(warn), ...ordered(info)].filter((c) => /^postgres /.test(String(c.line))).sort((a, b) => a.at - b.at));
  if (lines(warn).length !== 1) throw new Error(`one warn line expected; the lines: ${said()}`);
  expect(lines(warn).map((c) => c[1])).toEqual(['postgres is unreachable; waiting for it']);
  expect(lines(info).map((c) => [c[1], (c[0] as { primary?: string }).primary])).toEqual([['postgres is back', `127.0.0.1:${formation.ports.nodes[1]}`]]);
});
