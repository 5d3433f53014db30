import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { serveWorkerMetrics } from '../../apps/core/src/metrics/worker-server';
import { db } from '../../apps/core/src/db';
import { QUEUE, queue } from '../../apps/core/src/queues';
import { ADMIN_TOKEN, as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

const ctx = useApi();

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict reader of the Prometheus text format (0.0.4): every line is a comment, a HELP/TYPE line or a sample. */
function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\.)*",?)*)\\})? (-?(?:[0-9.]+(?:e[+-]?[0-9]+)?|[Nn]a[Nn]|\\+Inf|-Inf))(?: -?[0-9]+)?$`);
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const typeLine = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (typeLine) {
      types.set(typeLine[1]!, typeLine[2]!);
      continue;
    }
    if (new RegExp(`^# HELP ${NAME} .*$`).test(line)) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  for (const s of samples) {
    const family = s.name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(s.name) && !types.has(family)) throw new Error(`sample ${s.name} has no TYPE line`);
  }
  return { samples, types };
}

const value = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

const scrape = async () => {
  const res = await request(ctx.api.app).get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(res.text);
};

describe('GET /metrics', () => {
  it('needs the admin token', async () => {
    expect((await request(ctx.api.app).get('/metrics')).status).toBe(401);
    expect((await request(ctx.api.app).get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789')).status).toBe(401);
  });

  it('parses as Prometheus text and shows a queue depth that follows the jobs added', async () => {
    const before = await scrape();
    expect(before.types.get('mailservice_queue_jobs')).toBe('gauge');
    const waiting = value(before.samples, 'mailservice_queue_jobs', { queue: 'sequence', state: 'waiting' });
    expect(waiting).toBe(0);
    const sequence = queue(QUEUE.sequence);
    await sequence.addBulk([1, 2, 3].map((i) => ({ name: QUEUE.sequence, data: { prospectId: 900_000 + i, step: 1 } })));
    await sequence.add(QUEUE.sequence, { prospectId: 900_010, step: 1 }, { delay: 3_600_000 });
    const after = await scrape();
    expect(value(after.samples, 'mailservice_queue_jobs', { queue: 'sequence', state: 'waiting' })).toBe(3);
    expect(value(after.samples, 'mailservice_queue_jobs', { queue: 'sequence', state: 'delayed' })).toBe(1);
    await sequence.obliterate({ force: true });
    expect(value((await scrape()).samples, 'mailservice_queue_jobs', { queue: 'sequence', state: 'waiting' })).toBe(0);
  });

  it('counts HTTP requests by route pattern and status, and the messages still on their way', async () => {
    const tenant = await makeTenant();
    for (const to of ['a@example.org', 'b@example.org']) {
      expect((await as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 's', text: 't' })).status).toBe(202);
    }
    await as(ctx.api, tenant.token).get('/api/v1/send/00000000-0000-4000-8000-000000000000');
    // a refusal thrown in a nested router's route (Express has reset req.baseUrl by the time it is answered)
    expect((await as(ctx.api, ADMIN_TOKEN).patch('/admin/api/broadcasts/999999').send({ status: 'paused' })).status).toBe(404);
    const { samples, types } = await scrape();
    expect(types.get('mailservice_http_request_duration_seconds')).toBe('histogram');
    const count = (route: string, status: string) =>
      value(samples, 'mailservice_http_request_duration_seconds_count', { method: 'POST', route, status }) ??
      value(samples, 'mailservice_http_request_duration_seconds_count', { method: 'GET', route, status });
    expect(count('/api/v1/send', '202')).toBe(2);
    // the pattern, never the id
    expect(count('/api/v1/send/:id', '404')).toBe(1);
    expect(samples.some((s) => s.labels.route?.includes('00000000'))).toBe(false);
    expect(value(samples, 'mailservice_http_request_duration_seconds_count', { method: 'PATCH', route: '/admin/api/broadcasts/:id', status: '404' })).toBe(1);
    expect(value(samples, 'mailservice_messages_live', { status: 'queued' })).toBe(2);
    for (const name of ['mailservice_deliveries_total', 'mailservice_smtp_seconds', 'mailservice_webhook_deliveries_total', 'mailservice_inbound_messages_total']) {
      expect(types.has(name)).toBe(true);
    }
  });
});

describe('the oldest deferred message', () => {
  it("is a gauge of its age in seconds since it was accepted, 0 when none is deferred", async () => {
    expect(value((await scrape()).samples, 'mailservice_oldest_deferred_seconds', {})).toBe(0);
    const tenant = await makeTenant();
    const sent = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'slow@example.org', subject: 's', text: 't' });
    const { id } = await db().message.findFirstOrThrow({ where: { sendId: sent.body.id } });
    await db().message.update({ where: { id }, data: { status: 'deferred', createdAt: new Date(Date.now() - 20 * 60_000) } });
    const { samples, types } = await scrape();
    expect(types.get('mailservice_oldest_deferred_seconds')).toBe('gauge');
    const age = value(samples, 'mailservice_oldest_deferred_seconds', {})!;
    expect(age).toBeGreaterThanOrEqual(1200);
    expect(age).toBeLessThan(1260);
    await db().message.update({ where: { id }, data: { status: 'sent' } });
    expect(value((await scrape()).samples, 'mailservice_oldest_deferred_seconds', {})).toBe(0);
  });
});

describe('worker metrics on WORKER_METRICS_PORT', () => {
  const sink = useMail({ queues: ['delivery'], concurrency: 2 });

  it('count deliveries and time the SMTP conversation', async () => {
    const server = await serveWorkerMetrics(0, '127.0.0.1');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const tenant = await makeTenant({ smtp: sink.url });
      const read = async () => parsePrometheus(await (await fetch(`${url}/metrics`)).text()).samples;
      const sentBefore = value(await read(), 'mailservice_deliveries_total', { result: 'sent' }) ?? 0;
      expect((await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'w@example.org', subject: 's', text: 't' })).status).toBe(202);
      await waitFor(async () => (value(await read(), 'mailservice_deliveries_total', { result: 'sent' }) ?? 0) === sentBefore + 1, { what: 'a delivery counted' });
      expect(value(await read(), 'mailservice_smtp_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(1);
      expect((await fetch(`${url}/other`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
