/**
 * The fault suite's webhook workload (faults/run.ts, faults/topologies.ts): sends, a broadcast to a list and a webhook
 * for every `message.sent`, two workers, each event counted by its `webhook-id` at a receiver answering 204. Run once
 * on a Redis Cluster (`redis-cluster`) and five times with no fault at all (`webhooks-no-fault`).
 */
import http from 'node:http';
import type net from 'node:net';
import { Client } from 'pg';
import { seconds, type Kit, type TopologyScenario, type WorldLike } from './kit';

/** faults/run.ts starts the API with this token (ADMIN_TOKEN must be 32+ characters in production) */
const ADMIN_TOKEN = 'faults-admin-token-0123456789-abcdefghijklmnop';
/** Past the reconciler's margin (10 s overdue) and a reconcile tick (5 s): a second post of an event would be in by then. */
const SECOND_POST_WINDOW_MS = 20_000;
const AUDIENCE = 300;

export type Receiver = { url: string; received: Map<string, number>; close: () => Promise<void> };

/** An endpoint that answers 204 to every webhook and counts each event id (`webhook-id`) it received. */
export async function webhookReceiver(): Promise<Receiver> {
  const received = new Map<string, number>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      received.set(id, (received.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export function adminClient(port: number) {
  return async <T = unknown>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${port}/admin/api${p}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
}

export async function query<T>(world: WorldLike, text: string, values: unknown[]): Promise<T[]> {
  const client = new Client({ connectionString: world.env.DIRECT_DATABASE_URL ?? world.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * `rounds` times: 1,000 sends and a broadcast to the list's 300 subscribers, each delivered exactly once, and a
 * `message.sent` webhook for each, received once (by webhook-id). The receiver is watched for a second post for
 * 20 s after the last round's events all arrived (a duplicate came 10 to 13 s after the first post).
 */
export async function webhookWorkload<W extends WorldLike, A, D>(kit: Kit<W, A, D>, world: W, hooks: Receiver, rounds: number) {
  const w = world as W & { token: string };
  const admin = adminClient(w.apis[0]!.port);
  const { accounts } = await admin<{ accounts: { id: number; name: string }[] }>('GET', '/accounts');
  const account = accounts.find((a) => a.name === 'faults')!.id;
  const { mailboxes } = await admin<{ mailboxes: { id: number }[] }>('GET', `/mailboxes?account=${account}`);
  await admin('POST', '/webhooks', { account, url: hooks.url, events: ['message.sent'] });
  const { list } = await admin<{ list: { key: string } }>('POST', '/lists', { account, name: 'webhooks', confirm: false, mailbox: mailboxes[0]!.id });
  for (let i = 0; i < AUDIENCE; i++) {
    const res = await fetch(`http://127.0.0.1:${w.apis[0]!.port}/api/v1/subscribers`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${w.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ list: list.key, email: `member${i}@example.net` }),
    });
    if (!res.ok) throw new Error(`subscriber ${i}: ${res.status} ${await res.text()}`);
  }
  const sends = Math.min(kit.sends, 1000);
  const startedAt = Date.now();
  const ids: string[] = [];
  let sendsAccepted = 0;
  let copies = 0;
  const answers: A[] = [];
  let drainMs: number | null = 0;
  for (let round = 0; round < rounds; round++) {
    const { broadcast } = await admin<{ broadcast: { id: number } }>('POST', '/broadcasts', { list: list.key, subject: `News ${round + 1}`, text: 'Hello.' });
    await admin('PATCH', `/broadcasts/${broadcast.id}`, { status: 'sending' });
    const roundAnswers = await kit.load(world, sends, round * sends);
    answers.push(...roundAnswers);
    const sendIds = kit.accepted(roundAnswers);
    sendsAccepted += sendIds.length;
    const roundCopies = await kit.until(async () => {
      const rows = await query<{ id: string }>(world, 'SELECT id::text FROM messages WHERE broadcast_id = $1', [broadcast.id]);
      return rows.length === AUDIENCE ? rows.map((r) => r.id) : false;
    }, 120_000, 'the broadcast copies');
    copies += roundCopies.length;
    ids.push(...sendIds, ...roundCopies);
    const ms = await kit.drained(world.sink, ids, 180_000);
    drainMs = ms === null || drainMs === null ? null : Date.now() - startedAt;
    kit.log(`round ${round + 1} of ${rounds}: ${ids.length} delivered so far`);
  }
  // every message.sent event reached the endpoint; then long enough for a second post to come
  const events = await kit.until(async () => {
    const rows = await query<{ id: string }>(world, "SELECT id::text FROM events WHERE type = 'message.sent'", []);
    return rows.length >= ids.length && rows.every((r) => hooks.received.has(r.id)) ? rows.map((r) => r.id) : false;
  }, 120_000, 'the webhooks').catch(() => [] as string[]);
  await kit.sleep(SECOND_POST_WINDOW_MS);
  const d = await kit.delivery(world.sink, ids);
  const webhookDuplicates = [...hooks.received.values()].reduce((n, times) => n + times - 1, 0);
  return {
    accepted: d.accepted,
    delivered: d.delivered,
    duplicates: d.duplicates,
    lost: d.lost,
    drainSeconds: seconds(drainMs),
    duringFault: {
      rounds,
      sends: sendsAccepted,
      broadcastCopies: copies,
      answers: kit.summarizeAnswers(answers),
      webhookEvents: events.length,
      webhooksReceived: hooks.received.size,
      webhookDuplicates,
    },
    met:
      d.duplicates === 0 && d.lost === 0 && sendsAccepted === sends * rounds && copies === AUDIENCE * rounds &&
      events.length === ids.length && hooks.received.size === ids.length && webhookDuplicates === 0,
  };
}

/** The workload five times on a single Redis, two workers, no fault: 0 duplicate deliveries by webhook-id. */
export function webhookScenarios<W extends WorldLike, A, D>(kit: Kit<W, A, D>): Record<string, TopologyScenario<W>> {
  let hooks: Receiver | undefined;
  return {
    'webhooks-no-fault': {
      apis: 1,
      workers: 2,
      async setup() {
        hooks = await webhookReceiver();
      },
      async teardown() {
        await hooks?.close();
        hooks = undefined;
      },
      async run(world) {
        const outcome = await webhookWorkload(kit, world, hooks!, 5);
        return { ...outcome, target: '5 runs of 1,000 sends, a 300-copy broadcast and a webhook for every message.sent, 2 workers, no fault: every webhook once by webhook-id', met: outcome.met };
      },
    },
  };
}
