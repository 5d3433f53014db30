import http from 'node:http';
import type net from 'node:net';
import fc from 'fast-check';
import request from 'supertest';
import { db, rawQuery } from '../../apps/core/src/db';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * Property: whatever a client sends to any public or admin route, the answer is below 500; a JSON route answers a JSON
 * object with a boolean `ok`; and a refusal (4xx) leaves every table's row count as it was.
 * FUZZ_RUNS raises the cases per route (default 100: the whole file well under a minute on a busy machine).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const ctx = useApi();
let server: http.Server;
let base: string;
let tenant: Tenant;
let listKey: string;
let campaignId: number;
let tables: string[];

beforeAll(async () => {
  tenant = await makeTenant({ prospects: true });
  listKey = (await makeList(tenant.account.id, tenant.mailbox.id)).key;
  campaignId = (await makeCampaign(tenant.account.id, tenant.mailbox.id)).id;
  server = http.createServer(ctx.api.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  // every table, a partitioned one by its parent (which counts its partitions' rows)
  const rows = await db().$queryRaw<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname NOT LIKE '\_prisma%'`;
  tables = rows.map((r) => r.name);
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function rowCounts(): Promise<string> {
  // in objects of 40 tables (a function takes at most 100 arguments), joined
  const parts: string[] = [];
  for (let i = 0; i < tables.length; i += 40) {
    parts.push(`jsonb_build_object(${tables.slice(i, i + 40).map((t) => `'${t}', (SELECT count(*) FROM "${t}")`).join(', ')})`);
  }
  // prepared once: planning a statement over every table and partition took longer than the request it checks
  const [row] = await rawQuery<{ counts: unknown }>(db(), `SELECT ${parts.join(' || ')} AS counts`, [], 'fuzz-row-counts');
  return JSON.stringify(row?.counts);
}

// text with NULs, lone surrogates, newlines, and any code point
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', 'a@b.co', 'x@example.com', '\u0000', '\uD800', 'a\uDC00b', 'x\r\nBcc: e@vil.co', '1', '-1', 'running', 'won', 'replied'),
);
const number = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31, 2 ** 31 - 1, 2 ** 53, 1e308, 0.5));
const scalar = fc.oneof(text, number, fc.boolean(), fc.constant(null));
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, scalar, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(text, tie('value'), { maxKeys: 4 })),
})).value;

/** A body: any JSON, or an object of the route's own fields with any values, sometimes one known field made right. */
const bodyFor = (fields: string[]) =>
  fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.dictionary(fc.constantFrom(...fields, 'extra'), value, { maxKeys: fields.length + 1 }),
    fc.constant(undefined),
  );

const segment = fc.oneof(fc.nat().map(String), fc.constantFrom('0', '-1', '2147483648', '99999999999999999999', '1e3', 'abc', '%00', '%E0%A4%A', '%ZZ', '%F0%9F%98%80', '..'));
const queryFor = (keys: string[]) =>
  fc
    .dictionary(fc.constantFrom(...keys), fc.oneof(segment, text.map((t) => Buffer.from(t).toString('hex'))), { maxKeys: keys.length })
    .map((q) => Object.entries(q).map(([k, v]) => `${k}=${v}`).join('&'));

interface Route {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: (id: string) => string;
  auth: 'key' | 'admin' | 'none';
  fields?: string[];
  query?: string[];
  /** an HTML page or JSON-RPC: status only */
  html?: boolean;
}

const SEND = ['to', 'subject', 'text', 'html', 'from', 'reply_to', 'headers', 'attachments', 'send_at', 'metadata'];
const routes: Route[] = [
  { method: 'post', path: () => '/api/v1/send', auth: 'key', fields: SEND },
  { method: 'get', path: (id) => `/api/v1/send/${id}`, auth: 'key' },
  { method: 'post', path: () => '/api/v1/subscribers', auth: 'key', fields: ['list', 'email', 'name', 'tags', 'fields', 'confirmed'] },
  { method: 'delete', path: () => '/api/v1/subscribers', auth: 'key', fields: ['list', 'email'] },
  { method: 'get', path: () => '/api/v1/lists', auth: 'key' },
  { method: 'get', path: () => '/api/v1/campaigns', auth: 'key' },
  { method: 'post', path: () => '/api/v1/prospects', auth: 'key', fields: ['campaign', 'prospects'] },
  { method: 'get', path: () => '/api/v1/prospects', auth: 'key', query: ['campaign', 'email'] },
  { method: 'post', path: () => '/api/v1/prospects/state', auth: 'key', fields: ['campaign', 'email', 'state', 'reason', 'value'] },
  { method: 'post', path: () => '/mcp', auth: 'key', fields: ['jsonrpc', 'id', 'method', 'params'], html: true },
  { method: 'post', path: () => '/admin/api/accounts', auth: 'admin', fields: ['name'] },
  { method: 'get', path: () => '/admin/api/accounts', auth: 'admin' },
  { method: 'post', path: () => '/admin/api/mailboxes', auth: 'admin', fields: ['account', 'address', 'name', 'smtp', 'daily_limit', 'gap_seconds'] },
  { method: 'get', path: () => '/admin/api/mailboxes', auth: 'admin' },
  { method: 'post', path: () => '/admin/api/keys', auth: 'admin', fields: ['account', 'name', 'mailbox', 'daily_limit', 'prospects'] },
  { method: 'get', path: () => '/admin/api/keys', auth: 'admin' },
  { method: 'delete', path: (id) => `/admin/api/keys/${id}`, auth: 'admin' },
  { method: 'post', path: () => '/admin/api/lists', auth: 'admin', fields: ['account', 'name', 'confirm', 'mailbox'] },
  { method: 'post', path: () => '/admin/api/campaigns', auth: 'admin', fields: ['account', 'name', 'goal', 'mailbox', 'stages', 'status', 'steps'] },
  { method: 'patch', path: (id) => `/admin/api/campaigns/${id}`, auth: 'admin', fields: ['name', 'goal', 'mailbox', 'stages', 'status', 'steps'] },
  { method: 'get', path: () => '/admin/api/messages', auth: 'admin', query: ['to', 'limit', 'account'] },
  { method: 'patch', path: (id) => `/admin/api/mailboxes/${id}`, auth: 'admin', fields: ['name', 'smtp', 'daily_limit', 'gap_seconds', 'imap', 'max_per_second'] },
  { method: 'patch', path: (id) => `/admin/api/lists/${id}`, auth: 'admin', fields: ['name', 'confirm', 'mailbox'] },
  { method: 'get', path: (id) => `/admin/api/lists/${id}/subscribers`, auth: 'admin', query: ['status', 'q', 'after', 'limit'] },
  { method: 'get', path: () => '/admin/api/suppressions', auth: 'admin', query: ['account', 'after', 'limit'] },
  { method: 'delete', path: (id) => `/admin/api/suppressions/${id}`, auth: 'admin' },
  { method: 'get', path: () => '/admin/api/stop-list', auth: 'admin', query: ['account', 'after', 'limit'] },
  { method: 'delete', path: (id) => `/admin/api/stop-list/${id}`, auth: 'admin' },
  { method: 'get', path: (id) => `/f/${id}`, auth: 'none', html: true },
  { method: 'post', path: (id) => `/f/${id}`, auth: 'none', fields: ['email', 'name', 'website'], html: true },
  { method: 'get', path: (id) => `/confirm/${id}`, auth: 'none', html: true },
  { method: 'post', path: (id) => `/confirm/${id}`, auth: 'none', html: true },
];

describe('fuzzed requests never fault', () => {
  it.each(routes.map((r) => [r.method.toUpperCase(), r.path(':id'), r] as const))('%s %s', async (_m, _p, route) => {
    const ids = fc.oneof(segment, fc.constantFrom(String(campaignId), listKey));
    await fc.assert(
      fc.asyncProperty(ids, bodyFor(route.fields ?? ['x']), queryFor(route.query ?? ['x', 'limit']), async (id, body, query) => {
        const before = await rowCounts();
        let req = request(base)[route.method](`${route.path(id)}${query ? `?${query}` : ''}`);
        if (route.auth === 'key') req = req.set('Authorization', `Bearer ${tenant.token}`);
        if (route.auth === 'admin') req = req.set('Authorization', `Bearer ${ADMIN_TOKEN}`);
        if (route.path('x') === '/f/x' && route.method === 'post') {
          // a form carries text: a fuzzed value that is not a string goes as its JSON (String() throws on an object
          // whose own toString is not a function, such as {"toString": 0})
          const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
          req = req.type('form').send(new URLSearchParams(Object.entries((body ?? {}) as Record<string, unknown>).map(([k, v]): [string, string] => [k, text(v)])).toString());
        } else if (body !== undefined && route.method !== 'get') {
          req = req.set('Content-Type', 'application/json').send(JSON.stringify(body));
        }
        const res = await req;
        expect(res.status).toBeLessThan(500);
        if (!route.html) {
          expect(res.type).toBe('application/json');
          expect(typeof res.body.ok).toBe('boolean');
        }
        if (res.status >= 400) expect(await rowCounts()).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });
});
