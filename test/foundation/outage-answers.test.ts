import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { createDb, type Db } from '../../apps/core/src/db';
import { logger } from '../../apps/core/src/logger';
import { Redis } from 'ioredis';
import { refusalOf } from '../../apps/api/src/middleware/errors';
import { toolRefusal } from '../../apps/api/src/mcp/registration';
import { ADMIN_TOKEN } from '../helpers/api';
import { freePort } from '../helpers/processes';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';
import { PgProxy } from '../helpers/pg-proxy';

/**
 * Postgres going away under a running API: the public API (both the fast lane and Express), the MCP tools and the admin
 * console answer it through the one error mapper (middleware/errors.ts refusalOf): 503 with Retry-After, in the same
 * words, never a 500. A fault is a 500 with the request id in all three, and one error line carrying that id.
 */
const OUTAGE_WORDS = 'the service is briefly unavailable (database unreachable); repeat the request shortly';

const proxy = new PgProxy();
let proxied: Db;
let api: ApiApp;
let server: http.Server;
let base: string;
let tenant: Tenant;
let listKey: string;
let mcp: Client;
let console: { cookie: string };

beforeAll(async () => {
  await proxy.start();
  proxied = createDb(proxy.url());
  api = createApp(proxied);
  await api.start();
  server = http.createServer(api.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tenant = await makeTenant();
  listKey = (await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false })).key;

  // while Postgres answers: the key is known (the authenticator keeps it in memory), the MCP client is connected and
  // the console is signed in
  expect((await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer ${tenant.token}`)).status).toBe(200);
  mcp = new Client({ name: 'outage-test', version: '1.0.0' });
  const headers = { Authorization: `Bearer ${tenant.token}`, 'X-Request-Id': 'mcp-outage-1' };
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  const signin = await request(api.app).get('/admin/signin');
  const nonce = ([] as string[]).concat(signin.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
  const signedIn = await request(api.app).post('/admin/signin').set('Cookie', nonce).type('form').send({ _csrf: csrf, token: ADMIN_TOKEN });
  expect(signedIn.status).toBe(303);
  console = { cookie: ([] as string[]).concat(signedIn.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ') };
});

afterAll(async () => {
  proxy.restore();
  await mcp?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await api?.stop();
  await proxied?.$disconnect().catch(() => undefined);
  await proxy.stop();
});

describe('while Postgres is unreachable', () => {
  beforeAll(() => proxy.cutOff());
  afterAll(() => proxy.restore());

  it('the public API answers 503 with Retry-After in the fast lane and through Express alike', async () => {
    // a plain send or subscriber is answered by the fast lane (lane.ts); a subscriber with an Idempotency-Key and a
    // listing by Express (routes/)
    const key = { Authorization: `Bearer ${tenant.token}` };
    const send = await request(api.app).post('/api/v1/send').set(key).send({ to: 'reader@example.org', subject: 'Hi', text: 'x' });
    const subscriber = { list: listKey, email: 'outage@example.org' };
    const lane = await request(api.app).post('/api/v1/subscribers').set(key).send(subscriber);
    const express = await request(api.app).post('/api/v1/subscribers').set(key).set('Idempotency-Key', 'outage-answers-0001').send(subscriber);
    const lists = await request(api.app).get('/api/v1/lists').set(key);
    for (const res of [send, lane, express, lists]) {
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toEqual({ ok: false, error: OUTAGE_WORDS });
    }
  });

  it('an MCP tool answers an isError result with status 503, retry_after and the request id, in the same words', async () => {
    for (const [name, args] of [
      ['list_lists', {}],
      ['add_subscriber', { list: listKey, email: 'agent-outage@example.org' }],
      ['send_email', { to: 'reader@example.org', subject: 'Hi', text: 'x' }],
    ] as const) {
      const result = (await mcp.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: unknown; content: { text?: string }[] };
      const refusal = { ok: false, error: OUTAGE_WORDS, status: 503, retry_after: 5, request_id: 'mcp-outage-1' };
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toEqual(refusal);
      expect(JSON.parse(result.content[0]!.text!)).toEqual(refusal);
    }
  });

  it('a console page answers 503 with Retry-After, saying so in the same words', async () => {
    const res = await request(api.app).get('/admin/accounts').set('Cookie', console.cookie);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Briefly unavailable');
    expect(res.text).toContain(OUTAGE_WORDS);
  });
});

describe('an internal fault (a table the code needs is gone)', () => {
  beforeAll(() => proxied.$executeRawUnsafe('ALTER TABLE lists RENAME TO lists_away'));
  afterAll(() => proxied.$executeRawUnsafe('ALTER TABLE lists_away RENAME TO lists'));

  it('is a 500 naming the request id over HTTP, over MCP and in the console, with one error line carrying the id', async () => {
    const errors = jest.spyOn(logger, 'error');
    try {
      const http = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer ${tenant.token}`).set('X-Request-Id', 'http-fault-1');
      expect(http.status).toBe(500);
      expect(http.body).toEqual({ ok: false, error: 'internal error (request id http-fault-1)' });

      const tool = (await mcp.callTool({ name: 'list_lists', arguments: {} })) as { isError?: boolean; structuredContent?: unknown };
      expect(tool.isError).toBe(true);
      expect(tool.structuredContent).toEqual({ ok: false, error: 'internal error (request id mcp-outage-1)', status: 500, request_id: 'mcp-outage-1' });

      const page = await request(api.app).get('/admin/lists').set('Cookie', console.cookie).set('X-Request-Id', 'console-fault-1');
      expect(page.status).toBe(500);
      expect(page.text).toContain('Internal error');
    expect(page.text).toContain('internal error (request id console-fault-1)');

      const faults = errors.mock.calls.filter(([, msg]) => msg === 'request failed').map(([fields]) => (fields as { requestId: string }).requestId);
      expect(faults).toEqual(['http-fault-1', 'mcp-outage-1', 'console-fault-1']);
    } finally {
      errors.mockRestore();
    }
  });
});

it('a Redis outage reaching the mapper is a 503 with Retry-After too, as HTTP answers it and as an MCP result', async () => {
  const away = new Redis({ host: '127.0.0.1', port: await freePort(), maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  away.on('error', () => undefined);
  try {
    const err = await away.get('session').then(
      () => undefined,
      (e: unknown) => e,
    );
    const refusal = refusalOf(err, 'redis-away-1', { method: 'GET', path: '/admin' });
    expect(refusal).toEqual({
      status: 503,
      headers: { 'Retry-After': '5' },
      message: 'the service is briefly unavailable (Redis unreachable); repeat the request shortly',
      requestId: 'redis-away-1',
    });
    expect(toolRefusal(refusal)).toEqual({ ok: false, error: refusal.message, status: 503, retry_after: 5, request_id: 'redis-away-1' });
  } finally {
    away.disconnect();
  }
});
