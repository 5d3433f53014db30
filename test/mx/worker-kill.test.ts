import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { runTs, type Proc } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { inboundDomain, sendToMx, useMx } from './support';

/**
 * Each message the MX takes is one `inbound.received` whatever happens to the worker (docs/mx.md, "Durable before
 * 250"): the real worker process delivers to a slow receiver, is killed with SIGKILL mid-way while the MX goes on
 * taking mail, and a second worker process finishes. Every message reaches the receiver, all of its deliveries carry
 * one webhook-id (one event: a delivery the dead worker had in flight is sent again under the same id, as Standard
 * Webhooks has receivers dedupe), and Postgres holds one event per message.
 */
const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const mx = useMx(dns);

interface Seen { webhookId: string; messageId: string; answered: boolean }
const seen: Seen[] = [];
const pace = { next: 0 };
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { id: string } };
    if (body.type !== 'inbound.received') return void res.writeHead(200).end();
    const entry: Seen = { webhookId: String(req.headers['webhook-id']), messageId: body.data.id, answered: false };
    seen.push(entry);
    // one answer every 200 ms whatever the worker's concurrency: the kill finds deliveries in flight
    pace.next = Math.max(Date.now(), pace.next) + 200;
    setTimeout(() => {
      if (res.destroyed) return;
      res.writeHead(200).end('thanks', () => (entry.answered = true));
    }, pace.next - Date.now());
  });
});
beforeAll(() => new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve)));
afterAll(() => {
  receiver.closeAllConnections();
  return new Promise((resolve) => receiver.close(resolve));
});

const workers: Proc[] = [];
afterAll(() => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
});

const send = (to: string, subject: string) => sendToMx(mx.port, to, subject);

it('a worker killed with SIGKILL mid-way: each message is one inbound.received, delivered by the next worker', async () => {
  const tenant = await inboundDomain(ctx.api, 'in-kill.test', [{ match: '*', action: 'webhook' }]);
  const made = await asAdmin(ctx.api).post('/admin/api/webhooks').send({ account: tenant.account.id, url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['inbound.received'] });
  expect(made.status).toBe(201);

  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await send(`desk${i}@in-kill.test`, `before ${i}`));
  const first = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'warn' });
  workers.push(first);
  // a fresh process compiles and loads the app first: slow on a loaded machine
  await waitFor(() => seen.filter((s) => s.answered).length >= 3, { timeout: 150_000, interval: 50, what: 'the first worker to deliver some' });
  first.child.kill('SIGKILL');
  await first.exited;
  const answeredByFirst = new Set(seen.filter((s) => s.answered).map((s) => s.messageId));
  expect(answeredByFirst.size).toBeLessThan(ids.length);
  // deliveries were in flight when it died: the next worker sends them again, under the same webhook-id
  const inFlight = new Set(seen.filter((s) => !s.answered).map((s) => s.messageId));
  expect(inFlight.size).toBeGreaterThan(0);

  // the MX does not need the worker: mail taken while none runs is delivered later
  for (let i = 0; i < 5; i++) ids.push(await send(`desk${i}@in-kill.test`, `between ${i}`));
  const second = runTs('apps/worker/src/main.ts', [], { LOG_LEVEL: 'warn' });
  workers.push(second);
  await waitFor(() => ids.every((id) => seen.some((s) => s.messageId === id && s.answered)), { timeout: 150_000, interval: 100, what: 'every message delivered' });
  second.child.kill('SIGTERM');
  await second.exited;

  for (const id of ids) {
    const deliveries = seen.filter((s) => s.messageId === id);
    expect(new Set(deliveries.map((d) => d.webhookId)).size).toBe(1);
  }
  expect(new Set(seen.map((s) => s.messageId))).toEqual(new Set(ids));
  const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'inbound.received' } });
  expect(events).toHaveLength(ids.length);
  expect(new Set(events.map((e) => (e.data as { id: string }).id))).toEqual(new Set(ids));
}, 360_000);
