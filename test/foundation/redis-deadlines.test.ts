import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { db } from '../../apps/core/src/db';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { runProcess, type OwnProcess } from '../sending/helpers';

/**
 * docs/reliability.md: a request never waits on a Redis that hangs (SIGSTOP) or is gone (SIGKILL) longer than the
 * accept's 0.5 s. What Redis must decide (the subscribers' hourly window, the form's per-client window) answers 503 with
 * Retry-After; what it need not (a send, a cancel, a reschedule: the rows are in Postgres, the jobs the reconciler's)
 * answers as usual. The API runs as its own process against a Redis of this test's own, and logs one warn line for
 * the outage and no error line.
 */
jest.setTimeout(90_000);

let redis: ChildProcess;
let redisPort: number;
let api: OwnProcess;
let port: number;
let tenant: Tenant;
let listKey: string;

async function startRedis(): Promise<void> {
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const control = new Redis(redisPort, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true });
  control.on('error', () => undefined);
  try {
    await waitFor(() => control.ping().catch(() => null), { what: 'the private Redis' });
  } finally {
    control.disconnect();
  }
}

beforeAll(async () => {
  redisPort = await freePort();
  await startRedis();
  tenant = await makeTenant();
  listKey = (await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false })).key;
  port = await freePort();
  api = runProcess('test/sending/fixtures/api-process.ts', { PORT: String(port), REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'warn' });
  await waitFor(() => api.stdout().includes('listening') || api.child.exitCode !== null, { timeout: 30_000, what: 'the API process' });
  // every path once with Redis up: the timed answers below are of a Redis away, not of the process's first query of
  // each kind (Prisma compiles a statement's shape on its first use, which on a busy host takes hundreds of ms)
  const warm = await writesWith('warm');
  expect([warm.subscriber.status, warm.cancel.status, warm.reschedule.status, warm.send.status, warm.ready.status]).toEqual([200, 200, 200, 202, 200]);
});
afterAll(() => {
  if (api?.child.exitCode === null) api.child.kill('SIGKILL');
  if (redis?.exitCode === null) redis.kill('SIGKILL');
});

interface Answer {
  status: number;
  retryAfter: string | null;
  ms: number;
  body: unknown;
}

async function call(path: string, method = 'POST', body?: unknown, form = false): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), ms: Date.now() - started, body: form ? undefined : JSON.parse(text || '{}') };
}

/** A send for an hour from now: a copy still queued, to cancel or move. */
async function scheduledSend(subject: string): Promise<string> {
  const answer = await call('/api/v1/send', 'POST', { to: 'later@example.org', subject, text: 'x', send_at: new Date(Date.now() + 3_600_000).toISOString() });
  expect(answer.status).toBe(202);
  return (answer.body as { id: string }).id;
}

/**
 * A send to cancel and one to move, then `fault`, then each write path once: sign-ups by the API and by the form, the
 * cancel, the move, a send, readiness.
 */
async function writesWith(label: string, fault = () => {}) {
  const toCancel = await scheduledSend(`${label} cancel`);
  const toMove = await scheduledSend(`${label} move`);
  fault();
  return {
    subscriber: await call('/api/v1/subscribers', 'POST', { list: listKey, email: `${label}-new@example.org` }),
    form: await call(`/f/${listKey}`, 'POST', { email: `${label}-form@example.org`, name: 'Form' }, true),
    cancel: await call(`/api/v1/send/${toCancel}/cancel`),
    reschedule: await call(`/api/v1/send/${toMove}`, 'PATCH', { send_at: new Date(Date.now() + 7_200_000).toISOString() }),
    send: await call('/api/v1/send', 'POST', { to: 'now@example.org', subject: `${label} now`, text: 'x' }),
    ready: await call('/readyz', 'GET'),
    toCancel,
    toMove,
  };
}

/** Every write path during the fault: each answered within a second, a success or a 503 with Retry-After. */
async function writesDuring(fault: () => void, label: string) {
  const before = api.stdout().length;
  const { toCancel, toMove, ...answers } = await writesWith(label, fault);
  for (const [path, answer] of Object.entries(answers)) {
    expect([path, answer.ms < 1_000]).toEqual([path, true]);
    if (answer.status === 503) expect([path, answer.retryAfter]).toEqual([path, '5']);
  }
  // what Redis decides is refused; what it does not is done, in Postgres
  expect([answers.subscriber.status, answers.form.status, answers.ready.status]).toEqual([503, 503, 503]);
  expect([answers.cancel.status, answers.reschedule.status, answers.send.status]).toEqual([200, 200, 202]);
  expect(await db().message.findFirstOrThrow({ where: { sendId: toCancel } })).toMatchObject({ status: 'cancelled' });
  expect((await db().message.findFirstOrThrow({ where: { sendId: toMove } })).notBefore!.getTime()).toBeGreaterThan(Date.now() + 3_700_000);
  expect(await db().subscriber.count({ where: { email: { startsWith: label } } })).toBe(0);
  // the outage in the log: one warn line, no error line, no line per request
  const lines = api.stdout().slice(before).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });
  expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['redis is unreachable; waiting for it']);
}

it('answers every write within a second while Redis hangs (SIGSTOP), and serves again once it resumes', async () => {
  try {
    await writesDuring(() => redis.kill('SIGSTOP'), 'hung');
  } finally {
    // resumed whatever the checks found: a Redis left stopped would fail the next test too
    redis.kill('SIGCONT');
  }
  await waitFor(async () => (await call('/readyz', 'GET')).status === 200, { timeout: 10_000, what: 'ready again' });
  const added = await call('/api/v1/subscribers', 'POST', { list: listKey, email: 'after-hang@example.org' });
  expect(added.status).toBe(200);
});

it('answers every write within a second while Redis is gone (SIGKILL), and serves again once it is back', async () => {
  await writesDuring(() => redis.kill('SIGKILL'), 'dead');
  await startRedis();
  await waitFor(async () => (await call('/readyz', 'GET')).status === 200, { timeout: 15_000, what: 'ready again' });
  const added = await call('/api/v1/subscribers', 'POST', { list: listKey, email: 'after-death@example.org' });
  expect(added.status).toBe(200);
});
