import { Backoffs, type BackoffOptions } from 'bullmq';
import { JOB_OPTIONS, retryDelayMs } from '../../apps/core/src/queues';

/**
 * The SMTP retry budget of docs/sending.md, on a simulated clock: a relay that refuses every attempt for a while, and
 * the attempts a delivery job makes meanwhile, each wait computed by BullMQ's own backoff code from the delivery
 * queue's options (and the workers' strategy), as a worker would.
 */
const MINUTE = 60_000;

/** The times (ms after the first failure) of a delivery job's attempts, until one lands after `relayBackAt` or none is left. */
function attemptsThrough(relayBackAt: number, firstTriedInBatch: boolean): { at: number[]; delivered: boolean } {
  const options = JOB_OPTIONS.delivery;
  const backoff = Backoffs.normalize(options.backoff as BackoffOptions)!;
  // a copy first tried in a dispatch batch gets its own job, delayed by the backoff's first wait (deliverBatch)
  let now = 0;
  const at = firstTriedInBatch ? [0] : [];
  if (firstTriedInBatch) now += Backoffs.calculate(backoff, 1, new Error('refused'), undefined as never, retryDelayMs) as number;
  for (let made = 0; made < (options.attempts ?? 1); made++) {
    at.push(now);
    if (now >= relayBackAt) return { at, delivered: true };
    now += Backoffs.calculate(backoff, made + 1, new Error('421 try again later'), undefined as never, retryDelayMs) as number;
  }
  return { at, delivered: false };
}

it('keeps trying for about 40 minutes: a relay away 25 or 40 minutes still gets the email, with 8 attempts at most', () => {
  for (const batch of [false, true]) {
    const quarter = attemptsThrough(25 * MINUTE, batch);
    expect(quarter.delivered).toBe(true);
    const forty = attemptsThrough(40 * MINUTE, batch);
    expect(forty.delivered).toBe(true);
    expect(forty.at).toHaveLength(batch ? 9 : 8);
  }
});

it('gives up after the budget the docs state: the last attempt 42 min 20 s after the first failure', () => {
  const job = attemptsThrough(Infinity, false);
  expect(job.delivered).toBe(false);
  expect(job.at.map((t) => t / 1000)).toEqual([0, 20, 60, 140, 300, 620, 1260, 2540]);
  const batched = attemptsThrough(Infinity, true);
  expect(batched.at.at(-1)).toBe(2560_000); // 42 min 40 s, 9 tries
  expect(attemptsThrough(43 * MINUTE, false).delivered).toBe(false);
});
