/**
 * The growth phase's measurements (bench/growth.ts), one side at a time: accept, delivery, subscriber and prospect
 * adds, lookups, the console's searches and prospect lists, against the service on that side's database.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { Client } from 'pg';
import type { Names } from './growth-rows';

const LOAD_SECONDS = Number(process.env.BENCH_GROWTH_SECONDS ?? 5);
const DELIVERY_SENDS = 3_000;
const LOOKUPS = 1_000;

/** What a measurement needs of the service under the bench (a part of GrowthOptions). */
export interface ServiceHandles {
  apiPort: number;
  start: (entry: string, env: Record<string, string>) => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
  up: () => Promise<void>;
  sinkCount: () => Promise<number>;
  resetSink: () => Promise<void>;
  settle: (databaseUrl: string) => Promise<void>;
  adminToken: string;
}

export interface Measured {
  accept: number;
  delivery: number;
  subscriberAdd: number;
  prospectAdd: number;
  prospectLookupP50: number;
  prospectLookupP99: number;
  sendStatusP50: number;
  sendStatusP99: number;
  messageSearchP50: number;
  messageSearchP99: number;
  /** the console's search (GET /admin/api/messages/search) and prospect list (GET /admin/api/campaigns/:id/prospects), p99 */
  searchDomainP99: number;
  searchNextPageP99: number;
  searchSubjectP99: number;
  searchStatusDatesP99: number;
  searchIdP99: number;
  searchMessageIdP99: number;
  prospectsPageP99: number;
  prospectsStatusP99: number;
  prospectsDeepP99: number;
}

/** The searches' and prospect lists' p99 must stay under this on a year of rows (docs/operator.md). */
export const SEARCH_P99_LIMIT_MS = 50;
const SEARCHES = 200;

const LATENCIES: (keyof Measured)[] = [
  'prospectLookupP50', 'prospectLookupP99', 'sendStatusP50', 'sendStatusP99', 'messageSearchP50', 'messageSearchP99',
  'searchDomainP99', 'searchNextPageP99', 'searchSubjectP99', 'searchStatusDatesP99', 'searchIdP99', 'searchMessageIdP99',
  'prospectsPageP99', 'prospectsStatusP99', 'prospectsDeepP99',
];

/** The better of two measurements of the same tables, figure by figure (the higher throughput, the lower latency). */
export function best(a: Measured, b: Measured): Measured {
  const out = { ...a };
  for (const key of Object.keys(a) as (keyof Measured)[]) out[key] = LATENCIES.includes(key) ? Math.min(a[key], b[key]) : Math.max(a[key], b[key]);
  return out;
}

/** Each figure is printed as it is taken, so a run stopped part way still leaves what it measured. */
export const say = (line: string) => process.stderr.write(`bench growth: ${line}\n`);

export const json = (token: string) => ({ 'Content-Type': 'application/json', Authorization: `Bearer ${token}` });

async function rate(options: autocannon.Options): Promise<number> {
  const result = await autocannon({ connections: 20, duration: LOAD_SECONDS, ...options });
  if (result.non2xx || result.errors) throw new Error(`bench growth: ${options.url}${options.requests?.[0]?.path ?? ''} answered ${result.non2xx} non-2xx and ${result.errors} errors`);
  return Math.round(result.requests.average);
}

/** p50 and p99 of `n` sequential GETs of `path(i)`, in ms. */
async function latencies(base: string, token: string, n: number, path: (i: number) => string): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(base + path(i), { headers: { Authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`bench growth: GET ${path(i)} answered ${res.status}`);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => +ms[Math.min(ms.length - 1, Math.floor(ms.length * q))]!.toFixed(2);
  return { p50: at(0.5), p99: at(0.99) };
}

export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`bench growth: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The measurements of the phase, against the service on `databaseUrl` (API and worker started and stopped here). */
export async function measure(side: string, o: ServiceHandles, env: Record<string, string>, tenant: { token: string; account: number; mailbox: number }, names: Names & { searchTo: string }): Promise<Measured> {
  const base = `http://127.0.0.1:${o.apiPort}`;
  const taken = <T>(what: string, value: T): T => {
    say(`${side}: ${what} ${JSON.stringify(value)}`);
    return value;
  };
  const api = o.start('apps/api/src/server.ts', env);
  await o.up();
  const token = tenant.token;
  const send: autocannon.Options = { url: `${base}/api/v1/send`, method: 'POST', headers: json(token), body: JSON.stringify({ to: 'reader@example.com', subject: 'Growth', text: 'Hello' }) };
  await autocannon({ ...send, connections: 10, duration: 2 }); // warm-up
  await o.settle(env.DATABASE_URL!);
  const accept = taken('accept (req/s)', await rate(send));

  let n = 0;
  const subscriberAdd = taken('subscriber add (req/s)', await rate({
    url: base,
    requests: [{ method: 'POST', path: '/api/v1/subscribers', headers: json(token), setupRequest: (req) => ({ ...req, body: JSON.stringify({ list: names.addLists[n % names.addLists.length], email: `new${Date.now()}-${n++}@example.org`, name: 'New' }) }) }],
  }));
  let p = 0;
  const prospectAdd = taken('prospect add (req/s)', await rate({
    url: base,
    connections: 10,
    requests: [{ method: 'POST', path: '/api/v1/prospects', headers: json(token), setupRequest: (req) => ({ ...req, body: JSON.stringify({ campaign: names.campaign, prospects: [{ email: `np${Date.now()}-${p++}@new.example`, name: 'Pat' }] }) }) }],
  }));
  const lookup = taken('prospect lookup (ms)', await latencies(base, token, LOOKUPS, (i) => `/api/v1/prospects?campaign=${names.campaign}&email=${encodeURIComponent(`p${(i * 7919) % 1000}@site${(i * 7919) % 1000 % 997}.example`)}`));
  const sent = (await (await fetch(`${base}/api/v1/send`, { ...send, body: send.body as string } as RequestInit)).json()) as { id: string };
  const status = taken('GET /send/:id (ms)', await latencies(base, token, LOOKUPS, () => `/api/v1/send/${sent.id}`));
  const search = taken('message search by recipient (ms)', await latencies(base, o.adminToken, LOOKUPS / 3, () => `/admin/api/messages?to=${encodeURIComponent(names.searchTo)}&limit=50`));
  const operator = await operatorSearches(base, o.adminToken, env.DATABASE_URL!, names, taken);

  // delivery: DELIVERY_SENDS accepted with the worker stopped, then delivered by one worker
  await o.resetSink();
  await autocannon({ ...send, connections: 10, amount: DELIVERY_SENDS });
  const worker = o.start('apps/worker/src/main.ts', env);
  const t0 = performance.now();
  // everything accepted before (the accept load and the lookups' sends) is delivered too: count what the sink receives
  const queued = await countQueued(env.DATABASE_URL!);
  await until(async () => (await o.sinkCount()) >= queued, 10 * 60_000, `${queued} deliveries`);
  const delivery = taken('delivery (emails/s)', Math.round(queued / ((performance.now() - t0) / 1000)));
  await o.stop(worker);
  await o.stop(api);
  return {
    accept,
    delivery,
    subscriberAdd,
    prospectAdd,
    prospectLookupP50: lookup.p50,
    prospectLookupP99: lookup.p99,
    sendStatusP50: status.p50,
    sendStatusP99: status.p99,
    messageSearchP50: search.p50,
    messageSearchP99: search.p99,
    ...operator,
  };
}

/**
 * The console's searches and prospect lists, each SEARCHES times in a row (p99): a recipient domain's first page and
 * its next (keyset), subject words, a status over a month, an id, a Message-ID; a campaign's prospects, all, by
 * status, and a page deep in the list. The grown side's rows come from its data; the empty side asks the same of none.
 */
async function operatorSearches(base: string, token: string, databaseUrl: string, names: Names & { searchTo: string }, taken: <T>(what: string, value: T) => T) {
  const pg = new Client({ connectionString: databaseUrl });
  await pg.connect();
  let one: { id: string; header: string; domain: string } = { id: '0190a0a0-0000-7000-8000-000000000000', header: '<none@example.com>', domain: 'example.com' };
  let deep = 1;
  try {
    const { rows } = await pg.query(`SELECT id, message_id_header AS header, split_part("to", '@', 2) AS domain FROM messages WHERE "to" = $1 LIMIT 1`, [names.searchTo]);
    if (rows[0]) one = rows[0];
    const { rows: middle } = await pg.query(`SELECT max(id) / 2 + 1 AS id FROM prospects WHERE campaign_id = $1`, [names.campaign]);
    deep = Number(middle[0]?.id ?? 1) || 1;
  } finally {
    await pg.end();
  }
  const search = (query: string) => `/admin/api/messages/search?${query}&limit=50`;
  const p99 = async (what: string, path: (i: number) => string) => taken(`${what} p99 (ms)`, (await latencies(base, token, SEARCHES, path)).p99);
  const firstPage = (await (await fetch(base + search(`q=${one.domain}`), { headers: { Authorization: `Bearer ${token}` } })).json()) as { next: string | null };
  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const twoMonthsAgo = new Date(Date.now() - 60 * 86_400_000).toISOString().slice(0, 10);
  return {
    searchDomainP99: await p99('console search: a recipient domain', (i) => search(`q=d${(i * 7919) % 5000}.example`)),
    searchNextPageP99: await p99("console search: the domain's next page", () => search(`q=${one.domain}${firstPage.next ? `&before=${firstPage.next}` : ''}`)),
    searchSubjectP99: await p99('console search: subject words', (i) => search(`q=${encodeURIComponent(`grown ${(i * 7919) % 10_000_000}`)}`)),
    searchStatusDatesP99: await p99('console search: status over a month', () => search(`status=failed&from=${twoMonthsAgo}&to=${monthAgo}`)),
    searchIdP99: await p99('console search: an id', () => search(`q=${one.id}`)),
    searchMessageIdP99: await p99('console search: a Message-ID', () => search(`q=${encodeURIComponent(one.header)}`)),
    prospectsPageP99: await p99('prospects: first page', () => `/admin/api/campaigns/${names.campaign}/prospects?limit=50`),
    prospectsStatusP99: await p99('prospects: by status', () => `/admin/api/campaigns/${names.campaign}/prospects?status=replied&limit=50`),
    prospectsDeepP99: await p99('prospects: a deep page', () => `/admin/api/campaigns/${names.campaign}/prospects?status=later&before=${deep}&limit=50`),
  };
}

async function countQueued(databaseUrl: string): Promise<number> {
  const pg = new Client({ connectionString: databaseUrl });
  await pg.connect();
  try {
    const { rows } = await pg.query(`SELECT count(*)::int AS n FROM messages WHERE status IN ('queued', 'sending', 'deferred')`);
    return rows[0].n as number;
  } finally {
    await pg.end();
  }
}
