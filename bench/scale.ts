/**
 * The scale phase of `npm run bench` (BENCH_ONLY=scale): does delivery grow with the worker processes when the SMTP
 * server is remote? A sink that answers each email 50 ms late (SINK_DELAY_MS, like a server across the internet), then
 * for 1, 2 and 4 worker processes: SCALE_MESSAGES sends accepted at 50 connections, timed from the first accept to the
 * last email at the sink. The baseline is nodemailer's own pool straight to the same sink with as many connections as
 * the workers hold together (5 per mailbox and worker: apps/core/src/delivery/transport.ts), sending as many emails.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import nodemailer from 'nodemailer';

const SINK_DELAY_MS = 50;
const MESSAGES = Number(process.env.SCALE_MESSAGES ?? 2000);
const WORKERS = [1, 2, 4];
/** SMTP connections one worker keeps to a mailbox's server */
const CONNECTIONS_PER_WORKER = 5;
const WARMUP = 200;

export interface ScaleRow {
  workers: number;
  perSecond: number;
  baselineConnections: number;
  baselinePerSecond: number;
  ratio: number;
}

export interface ScaleFigures {
  sinkDelayMs: number;
  messages: number;
  rows: ScaleRow[];
}

export interface ScaleDeps {
  ports: { api: number; smtp: number; http: number };
  startSink: (env: Record<string, string>) => ChildProcess;
  startApi: () => ChildProcess;
  startWorker: () => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
  up: (port: number, path?: string) => Promise<void>;
  makeTenant: () => Promise<{ token: string }>;
  jsonHeaders: (token?: string) => Record<string, string>;
  sendBody: string;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function scalePhase(deps: ScaleDeps): Promise<ScaleFigures> {
  const sinkUrl = `http://127.0.0.1:${deps.ports.http}`;
  const count = async () => ((await (await fetch(`${sinkUrl}/count`)).json()) as { count: number }).count;
  const reset = async () => void (await fetch(`${sinkUrl}/reset`, { method: 'POST' }));
  const sink = deps.startSink({ SINK_SMTP_PORT: String(deps.ports.smtp), SINK_HTTP_PORT: String(deps.ports.http), SINK_DELAY_MS: String(SINK_DELAY_MS) });
  await deps.up(deps.ports.http, '/count');
  const api = deps.startApi();
  await deps.up(deps.ports.api);
  const tenant = await deps.makeTenant();
  const send = (amount: number) =>
    autocannon({ url: `http://127.0.0.1:${deps.ports.api}/api/v1/send`, method: 'POST', headers: deps.jsonHeaders(tenant.token), body: deps.sendBody, connections: 50, amount });

  const rows: ScaleRow[] = [];
  try {
    for (const n of WORKERS) {
      const workers = Array.from({ length: n }, () => deps.startWorker());
      // warm-up: every worker's JIT and SMTP connections (the sends spread over the workers by the queue)
      await reset();
      await send(WARMUP * n);
      await waitFor(async () => (await count()) >= WARMUP * n, 5 * 60_000, 'the scale phase\'s warm-up deliveries');
      await reset();
      const t0 = performance.now();
      const accepted = await send(MESSAGES);
      if (accepted.non2xx + accepted.errors > 0) throw new Error(`bench: ${accepted.non2xx + accepted.errors} sends refused in the scale phase`);
      await waitFor(async () => (await count()) >= MESSAGES, 10 * 60_000, `${MESSAGES} deliveries with ${n} workers`);
      const ours = (performance.now() - t0) / 1000;
      await Promise.all(workers.map((w) => deps.stop(w)));
      const connections = CONNECTIONS_PER_WORKER * n;
      const bare = await poolSeconds(deps.ports.smtp, connections, reset);
      rows.push({
        workers: n,
        perSecond: Math.round(MESSAGES / ours),
        baselineConnections: connections,
        baselinePerSecond: Math.round(MESSAGES / bare),
        ratio: +(bare / ours).toFixed(2),
      });
      console.log(`scale: ${n} worker(s) ${rows.at(-1)!.perSecond} msg/s; nodemailer pool of ${connections} ${rows.at(-1)!.baselinePerSecond} msg/s`);
    }
  } finally {
    await deps.stop(api);
    await deps.stop(sink);
  }
  return { sinkDelayMs: SINK_DELAY_MS, messages: MESSAGES, rows };
}

/** nodemailer's pool of `connections` straight to the slow sink: a warm-up, then MESSAGES emails timed. */
async function poolSeconds(port: number, connections: number, reset: () => Promise<void>): Promise<number> {
  const pool = nodemailer.createTransport({ pool: true, maxConnections: connections, maxMessages: Infinity, host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  const sendAll = (n: number, tag: string) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        pool.sendMail({ from: 'bench@example.com', to: 'reader@example.com', subject: 'Benchmark', text: `Hello ${i}`, messageId: `<${tag}${i}.${Date.now()}@example.com>` }),
      ),
    );
  await sendAll(WARMUP, 'sw');
  await reset();
  const t0 = performance.now();
  await sendAll(MESSAGES, 'sb');
  const seconds = (performance.now() - t0) / 1000;
  pool.close();
  return seconds;
}
