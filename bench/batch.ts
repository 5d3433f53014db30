/**
 * The bench's `batch` phase (BENCH_ONLY=batch): POST /api/v1/send/batch with 100 messages a request against the same
 * messages sent one a request to POST /api/v1/send, the API alone (no worker: acceptance is what is measured). Each
 * side accepts `messages` emails a turn, in turns (A B, B A, A B); the figure is messages accepted a second.
 * Target: the batch side's rate >= 0.9 of the single sends'.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';

export interface BatchPhaseDeps {
  apiPort: number;
  messages: number;
  /** the single sends' concurrent connections; the batch side uses a tenth of them (each request is 100 messages) */
  connections: number;
  turns: number;
  startApi: () => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
  up: (port: number) => Promise<void>;
  makeTenant: () => Promise<{ token: string }>;
  settle: () => Promise<void>;
}

const BATCH_SIZE = 100;

const message = (i: number) => ({ to: `reader${i}@example.com`, subject: `Your digest ${i}`, text: `Hello reader ${i}, here is what happened this week.` });

export async function batchPhase(deps: BatchPhaseDeps) {
  const api = deps.startApi();
  await deps.up(deps.apiPort);
  const tenant = await deps.makeTenant();
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${tenant.token}` };
  const bodies = {
    single: JSON.stringify(message(1)),
    batch: JSON.stringify({ messages: Array.from({ length: BATCH_SIZE }, (_, i) => message(i)) }),
  };
  const refused = { single: 0, batch: 0 };
  const turn = async (side: 'single' | 'batch', messages: number) => {
    const batch = side === 'batch';
    const t0 = performance.now();
    const result = await autocannon({
      url: `http://127.0.0.1:${deps.apiPort}/api/v1/send${batch ? '/batch' : ''}`,
      method: 'POST',
      headers,
      body: bodies[side],
      connections: batch ? Math.max(2, Math.round(deps.connections / 10)) : deps.connections,
      amount: batch ? Math.ceil(messages / BATCH_SIZE) : messages,
    });
    refused[side] += result.non2xx + result.errors;
    return { seconds: (performance.now() - t0) / 1000, accepted: result['2xx'] * (batch ? BATCH_SIZE : 1), p99: result.latency.p99 };
  };
  // warm-up of both paths, outside the clock
  await turn('single', Math.ceil(deps.messages / 2));
  await turn('batch', Math.ceil(deps.messages / 2));
  await deps.settle();
  refused.single = refused.batch = 0;
  const seconds = { single: 0, batch: 0 };
  const accepted = { single: 0, batch: 0 };
  const p99 = { single: 0, batch: 0 };
  for (let i = 0; i < deps.turns; i++) {
    const order: ('single' | 'batch')[] = i % 2 === 0 ? ['single', 'batch'] : ['batch', 'single'];
    for (const side of order) {
      const t = await turn(side, deps.messages);
      seconds[side] += t.seconds;
      accepted[side] += t.accepted;
      p99[side] = Math.max(p99[side], t.p99);
    }
  }
  await deps.stop(api);
  const singleRate = accepted.single / seconds.single;
  const batchRate = accepted.batch / seconds.batch;
  return {
    messages: deps.messages,
    turns: deps.turns,
    singlePerSecond: Math.round(singleRate),
    batchMessagesPerSecond: Math.round(batchRate),
    ratio: +(batchRate / singleRate).toFixed(2),
    p99Ms: p99,
    refused,
  };
}
