/**
 * What the fault suite's scenario files share: the shape of a world and of the helpers run.ts hands them (`Kit`), the
 * shape of a scenario and of its result, and the small helpers every file uses (waiting, logging).
 */
import type { ChildProcess } from 'node:child_process';

/** What a scenario here needs of run.ts's world and helpers. */
export interface WorldLike {
  name: string;
  env: Record<string, string>;
  workers: { child: ChildProcess }[];
  apis: { service: { child: ChildProcess }; port: number }[];
  workerCount: number;
  startWorker: () => unknown;
  sink: { smtpPort: number; httpPort: number };
}

export interface Kit<W extends WorldLike, A, D> {
  tmp: string;
  asRoot: boolean;
  pgPort: () => number;
  freePort: () => Promise<number>;
  until: <T>(check: () => Promise<T | false | null | undefined>, timeoutMs: number, what: string, interval?: number) => Promise<T>;
  sleep: (ms: number) => Promise<unknown>;
  log: (...parts: unknown[]) => void;
  load: (world: W, count: number, from?: number, concurrency?: number) => Promise<A[]>;
  accepted: (answers: A[]) => string[];
  drained: (sink: W['sink'], ids: string[], timeoutMs: number) => Promise<number | null>;
  delivery: (sink: W['sink'], ids: string[]) => Promise<D & { accepted: number; delivered: number; duplicates: number; lost: number }>;
  deliveredCount: (sink: W['sink']) => Promise<number>;
  summarizeAnswers: (answers: A[]) => unknown;
  sends: number;
  logsDir: string;
}

export interface TopologyScenario<W> {
  apis: number;
  workers: number;
  drainFirst?: boolean;
  /** before the world's APIs start: start the servers and point world.env at them */
  setup: (world: W) => Promise<void>;
  /** after the scenario, whatever happened */
  teardown: () => Promise<void>;
  run: (world: W) => Promise<Omit<Result, 'scenario' | 'notes'>>;
}

/** One row of faults/results.json. */
export interface Result {
  scenario: string;
  accepted: number;
  delivered: number;
  duplicates: number;
  lost: number;
  drainSeconds: number | null;
  duringFault: unknown;
  target: string;
  met: boolean;
  notes?: unknown;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (...parts: unknown[]) => console.log(`[faults ${new Date().toISOString().slice(11, 19)}]`, ...parts);
export const seconds = (ms: number | null) => (ms === null ? null : Math.round(ms / 100) / 10);

export async function until<T>(check: () => Promise<T | false | null | undefined>, timeoutMs: number, what: string, interval = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(interval);
  }
}

export function pick(d: { accepted: number; delivered: number; duplicates: number; lost: number }) {
  return { accepted: d.accepted, delivered: d.delivered, duplicates: d.duplicates, lost: d.lost };
}
