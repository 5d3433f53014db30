/** The fault suite's load (keyed sends over the world's APIs) and its measurements (the sink's ids, the rows' statuses). */
import { Client } from 'pg';
import { sleep, until } from './kit';
import type { Sink, World } from './world';

/** the sends of each scenario (FAULTS_SENDS, default 2000) */
export const SENDS = Number(process.env.FAULTS_SENDS ?? 2000);
const SEND_CONCURRENCY = 50;

export interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
  ids: string[];
}

/**
 * One send; a request that got no answer at all (a kept-alive connection the server closed as it was reused) is
 * repeated under the same Idempotency-Key, so it is accepted once whatever happened to the first.
 */
async function send(port: number, token: string, i: number): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await sendOnce(port, token, i);
    if (answer.status !== 0 || attempt === 3) return answer;
  }
}

export async function sendOnce(port: number, token: string, i: number): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': `fault-${i}` },
      body: JSON.stringify({ to: `reader${i}@example.org`, subject: `Fault ${i}`, text: 'Hello from the fault suite.' }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json().catch(() => ({}))) as { messages?: { id: string }[] };
    const ok = res.status === 202 || res.status === 200;
    return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.get('retry-after'), ids: ok ? (body.messages ?? []).map((m) => m.id) : [] };
  } catch {
    return { status: 0, ms: performance.now() - started, retryAfter: null, ids: [] };
  }
}

/** `count` sends at SEND_CONCURRENCY at once, spread over the world's APIs; numbering starts at `from`. */
export async function load(world: World, count: number, from = 0, concurrency = SEND_CONCURRENCY): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        answers.push(await send(world.apis[i % world.apis.length]!.port, world.token, from + i));
      }
    }),
  );
  return answers;
}

export function summarizeAnswers(answers: Answer[]) {
  const statuses: Record<string, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  const sorted = answers.map((a) => a.ms).sort((x, y) => x - y);
  const pct = (p: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10 : null);
  const retryAfter = [...new Set(answers.filter((a) => a.status === 503).map((a) => a.retryAfter))];
  return { requests: answers.length, statuses, p50Ms: pct(0.5), p99Ms: pct(0.99), maxMs: pct(1), retryAfter503: retryAfter };
}

export async function sinkIds(sink: Sink): Promise<Map<string, number[]>> {
  const raw = (await (await fetch(`http://127.0.0.1:${sink.httpPort}/ids`)).json()) as Record<string, number[]>;
  // <uuid@domain>: the row id is the uuid
  return new Map(Object.entries(raw).map(([header, times]) => [header.slice(1).split('@')[0]!, times]));
}

export async function sinkUnique(sink: Sink): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${sink.httpPort}/count`)).json()) as { unique: number }).unique;
}

export interface Delivery {
  accepted: number;
  delivered: number;
  duplicates: number;
  lost: number;
  duplicateIds: string[];
  received: Map<string, number[]>;
}

export async function delivery(sink: Sink, accepted: string[]): Promise<Delivery> {
  const received = await sinkIds(sink);
  const duplicateIds = [...received].filter(([, times]) => times.length > 1).map(([id]) => id);
  return {
    accepted: accepted.length,
    delivered: accepted.filter((id) => received.has(id)).length,
    duplicates: [...received.values()].reduce((n, times) => n + times.length - 1, 0),
    lost: accepted.filter((id) => !received.has(id)).length,
    duplicateIds,
    received,
  };
}

/** Waits until every accepted id reached the sink (or the timeout); answers the time it took, or null. */
export async function drained(sink: Sink, accepted: string[], timeoutMs: number): Promise<number | null> {
  const started = Date.now();
  const want = new Set(accepted);
  try {
    await until(async () => {
      if ((await sinkUnique(sink)) < want.size) return false;
      const got = await sinkIds(sink);
      return [...want].every((id) => got.has(id));
    }, timeoutMs, 'the drain', 250);
    return Date.now() - started;
  } catch {
    return null;
  }
}

export const accepted = (answers: Answer[]) => answers.flatMap((a) => a.ids);

export async function statusCounts(world: World): Promise<Record<string, number>> {
  const client = new Client({ connectionString: world.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ status: string; n: number }>('SELECT status::text, count(*)::int AS n FROM messages GROUP BY status');
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await client.end();
  }
}

export async function deliveredCount(sink: Sink): Promise<number> {
  return sinkUnique(sink);
}

/**
 * One keyed send repeated as a client should: after no answer or a 503, and after a 409 (the key still in progress)
 * when its Retry-After says, until a 2xx or the deadline. Answers every status seen, each 409's Retry-After, the ids
 * and when the 2xx came.
 */
export async function sendUntilAnswered(world: World, i: number, deadlineMs: number): Promise<{ statuses: number[]; conflicts: (string | null)[]; ids: string[]; at: number }> {
  const until = Date.now() + deadlineMs;
  const statuses: number[] = [];
  const conflicts: (string | null)[] = [];
  for (;;) {
    const api = world.apis[world.apis.length - 1]!;
    const answer = await sendOnce(api.port, world.token, i);
    statuses.push(answer.status);
    if (answer.status === 409) conflicts.push(answer.retryAfter);
    if (answer.status === 202 || answer.status === 200) return { statuses, conflicts, ids: answer.ids, at: Date.now() };
    if (![0, 409, 503].includes(answer.status) || Date.now() > until) return { statuses, conflicts, ids: [], at: Date.now() };
    await sleep(answer.retryAfter ? Math.min(5_000, Number(answer.retryAfter) * 1000) : 250);
  }
}

export function summarizeStatuses(statuses: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

export async function sendingIds(world: World): Promise<string[]> {
  const client = new Client({ connectionString: world.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query<{ id: string }>("SELECT id::text FROM messages WHERE status = 'sending'")).rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}
