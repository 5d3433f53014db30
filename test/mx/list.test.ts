import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { as, asAdmin, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { makeTenant } from '../helpers/factories';
import { inboundDomain, sendToMx, useMx } from './support';

/**
 * GET /api/v1/inbound?source=mx and MCP list_inbound (docs/mx.md): the MX's delivered messages, each as its
 * inbound.received data, in the order they were delivered (a released one after those taken before its release).
 */
const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const mx = useMx(dns);
let server: Server | undefined;
afterAll(async () => {
  server?.closeAllConnections();
  if (server) await new Promise((resolve) => server!.close(resolve));
});

const send = (to: string, subject: string) => sendToMx(mx.port, to, subject, `about ${subject}

> quoted`);

it('lists the MX messages the account was given, by key and over MCP; held ones only once released; another account sees none; bad cursors are refused', async () => {
  const tenant = await makeTenant();
  const stranger = await makeTenant();
  await inboundDomain(ctx.api, 'in-list.test', [{ match: 'desk+*', action: 'webhook' }, { match: 'later', action: 'hold' }], tenant.account);
  const first = await send('desk+one@in-list.test', 'one');
  const held = await send('later@in-list.test', 'held');
  await send('desk+two@in-list.test', 'two');

  const page = await as(ctx.api, tenant.token).get('/api/v1/inbound?source=mx&limit=2');
  expect(page.status).toBe(200);
  expect(page.body.messages.map((m: { subject: string }) => m.subject)).toEqual(['one', 'two']);
  expect(page.body.messages[0]).toMatchObject({ id: first, domain: 'in-list.test', hash: 'one', reply_text: 'about one', envelope: { from: 'ann@plain.test', to: ['desk+one@in-list.test'] }, auth: { spf: { result: 'pass' } } });
  expect(page.body.messages[0].raw_url).toMatch(new RegExp(`/inbound/mx/${first}/raw\\?expires=`));
  expect(page.body.next).toBe(page.body.messages[1].id);
  expect((await as(ctx.api, tenant.token).get(`/api/v1/inbound?source=mx&after=${page.body.next}`)).body).toEqual({ ok: true, messages: [], next: null });

  expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${held}/release`)).status).toBe(200);
  const rest = await as(ctx.api, tenant.token).get(`/api/v1/inbound?source=mx&after=${page.body.next}`);
  expect(rest.body).toMatchObject({ ok: true, messages: [expect.objectContaining({ id: held, subject: 'held' })], next: null });

  // the mailboxes' list is unchanged by the MX's, and another account sees none of them
  expect((await as(ctx.api, tenant.token).get('/api/v1/inbound')).body).toEqual({ ok: true, messages: [], next: null });
  expect((await as(ctx.api, stranger.token).get('/api/v1/inbound?source=mx')).body).toEqual({ ok: true, messages: [], next: null });
  expect((await as(ctx.api, stranger.token).get(`/api/v1/inbound?source=mx&after=${first}`)).status).toBe(400);
  expect((await as(ctx.api, tenant.token).get('/api/v1/inbound?source=mx&after=12')).status).toBe(400);
  expect((await as(ctx.api, tenant.token).get('/api/v1/inbound?source=mx&mailbox=1')).status).toBe(400);
  expect((await as(ctx.api, tenant.token).get('/api/v1/inbound?source=pop')).status).toBe(400);

  server = ctx.api.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server!.once('listening', resolve));
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tenant.token}` } } }));
  try {
    const result = (await client.callTool({ name: 'list_inbound', arguments: { source: 'mx', after: first } })) as { structuredContent: Record<string, any> };
    expect(result.structuredContent).toMatchObject({ ok: true, messages: [expect.objectContaining({ subject: 'two' }), expect.objectContaining({ subject: 'held' })], next: null });
  } finally {
    await client.close();
  }
}, 60_000);
