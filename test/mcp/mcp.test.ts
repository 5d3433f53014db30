import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });
let server: Server;
let base: string;

beforeAll(async () => {
  server = ctx.api.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text?: string }[] };
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A success: structured content, the same JSON as text. */
function ok(result: ToolResult): Record<string, any> {
  expect(result.isError).toBeFalsy();
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result.structuredContent!;
}

/**
 * A refusal: an isError result with the HTTP API's status and words (and `extra`: retry_after where HTTP sends
 * Retry-After), the same JSON as text.
 */
function refused(result: ToolResult, status: number, words: RegExp | string, extra: Record<string, unknown> = {}): void {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toEqual({ ok: false, error: expect.any(String), status, ...extra });
  expect(result.structuredContent!.error).toEqual(typeof words === 'string' ? words : expect.stringMatching(words));
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
}

const BASIC_TOOLS = ['add_subscriber', 'cancel_send', 'get_send_status', 'list_inbound', 'list_lists', 'remove_subscriber', 'reschedule_send', 'send_batch', 'send_email', 'verify_addresses'];
const PROSPECT_TOOLS = ['add_prospects', 'get_prospect', 'list_campaigns', 'report_prospect_state'];

describe('MCP at /mcp: connecting', () => {
  it('initializes and lists the five basic tools for a key without the prospects permission', async () => {
    const tenant = await makeTenant();
    const client = await connect(tenant.token);
    expect(client.getServerVersion()?.name).toBe('mailservice');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(BASIC_TOOLS);
    const send = tools.find((t) => t.name === 'send_email')!;
    // subject is required unless a template is given (the API's validation says so, with its words)
    expect(send.inputSchema.required).toEqual(['to']);
    expect((send.inputSchema.properties as any).subject.description).toMatch(/1 to 300/);
    expect((send.inputSchema.properties as any).idempotency_key.description).toMatch(/24 h/);
  });

  it('lists the campaign and prospect tools too for a key with the prospects permission', async () => {
    const tenant = await makeTenant({ prospects: true });
    const { tools } = await (await connect(tenant.token)).listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...BASIC_TOOLS, ...PROSPECT_TOOLS].sort());
    for (const t of tools) expect(t.description!.length).toBeGreaterThan(20);
  });

  it('answers 401 JSON with WWW-Authenticate before any tool runs: no key, a bad key, a revoked key', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (headers: Record<string, string>) =>
      fetch(`${base}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(initialize) });
    const tenant = await makeTenant();
    for (const headers of [{}, { Authorization: 'Bearer msk_notakey' }, { Authorization: 'Basic abc' }] as Record<string, string>[]) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.json()).toEqual({ ok: false, error: expect.any(String) });
    }
    expect((await post({ Authorization: `Bearer ${tenant.token}` })).status).toBe(200);
    await asAdmin(ctx.api).delete(`/admin/api/keys/${tenant.keyId}`).expect(200);
    const revoked = await post({ Authorization: `Bearer ${tenant.token}` });
    expect(revoked.status).toBe(401);
    expect(await revoked.json()).toEqual({ ok: false, error: 'the API key is unknown or revoked' });
    await expect(connect(tenant.token)).rejects.toThrow(/unknown or revoked/);
  });

  it('refuses GET and DELETE on the stateless endpoint with JSON 405', async () => {
    const tenant = await makeTenant();
    const res = await fetch(`${base}/mcp`, { headers: { Authorization: `Bearer ${tenant.token}`, Accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(((await res.json()) as { ok: boolean }).ok).toBe(false);
  });
});

describe('MCP tools give what the HTTP API gives', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await makeTenant({ smtp: sink.url, prospects: true, daily_limit: 5 });
  });

  it('send_email takes a stored template and its variables, and refuses a missing required variable as the API does', async () => {
    const own = await makeTenant({ smtp: sink.url });
    const created = await asAdmin(ctx.api)
      .post('/admin/api/templates')
      .send({ account: own.account.id, name: 'Receipt', alias: 'receipt', subject: 'Receipt for {{ name }}', html: '<p>Thanks {{ name }}, you paid {{ amount }}.</p>', required: ['amount'] });
    expect(created.status).toBe(201);
    const client = await connect(own.token);
    ok(await call(client, 'send_email', { to: 'payer@example.org', template: 'receipt', variables: { name: 'Pat <P>', amount: '$5' } }));
    await waitFor(() => sink.to('payer@example.org').length === 1, { what: 'the templated MCP email' });
    const mail = sink.to('payer@example.org')[0]!.parsed;
    expect(mail.subject).toBe('Receipt for Pat <P>');
    expect(mail.html).toContain('<p>Thanks Pat &lt;P&gt;, you paid $5.</p>');
    expect(mail.text).toContain('Thanks Pat <P>, you paid $5.');
    const http = await as(ctx.api, own.token).post('/api/v1/send').send({ to: 'payer@example.org', template: 'receipt', variables: { name: 'Pat' } });
    expect(http.status).toBe(422);
    refused(await call(client, 'send_email', { to: 'payer@example.org', template: 'receipt', variables: { name: 'Pat' } }), 422, http.body.error);
  });

  it('send_email delivers on the wire, and get_send_status answers as GET /send/:id', async () => {
    const client = await connect(tenant.token);
    const sent = ok(await call(client, 'send_email', { to: 'Agent Reader <reader@example.org>', subject: 'From an agent', text: 'Sent through MCP', metadata: { via: 'mcp' } }));
    expect(sent).toMatchObject({ ok: true, status: 'queued', messages: [{ to: 'reader@example.org', status: 'queued' }], skipped: [], replayed: false });
    await waitFor(() => sink.to('reader@example.org').length === 1, { what: 'the MCP email on the sink' });
    const [mail] = sink.to('reader@example.org');
    expect(mail!.parsed.subject).toBe('From an agent');
    expect(mail!.parsed.text?.trim()).toBe('Sent through MCP');
    expect(mail!.envelope.from).toBe(tenant.mailbox.address);

    await waitFor(async () => (await db().message.findFirst({ where: { sendId: sent.id } }))?.status === 'sent', { what: 'sent mark' });
    const status = ok(await call(client, 'get_send_status', { id: sent.id }));
    const http = await as(ctx.api, tenant.token).get(`/api/v1/send/${sent.id}`);
    expect(status).toEqual(http.body);
    expect(status.status).toBe('sent');
  });

  it('send_email refuses an argument it does not know (cc) with the 400 POST /send answers, and sends nothing', async () => {
    const client = await connect(tenant.token);
    const args = { to: 'unknown-arg@example.org', subject: 'Copied', text: 'x', cc: 'boss@example.org' };
    const http = await as(ctx.api, tenant.token).post('/api/v1/send').send(args).expect(400);
    refused(await call(client, 'send_email', args), 400, http.body.error);
    expect(http.body.error).toMatch(/cc/);
    expect(await db().message.count({ where: { to: { in: ['unknown-arg@example.org', 'boss@example.org'] } } })).toBe(0);
  });

  it('send_email honours idempotency_key: a replay sends nothing, another body is 422', async () => {
    const client = await connect(tenant.token);
    const args = { to: 'idem@example.org', subject: 'Once', text: 'x', idempotency_key: 'mcp-once-1' };
    const first = ok(await call(client, 'send_email', args));
    const again = ok(await call(client, 'send_email', args));
    expect(again).toEqual({ ...first, replayed: true });
    expect(await db().message.count({ where: { to: 'idem@example.org' } })).toBe(1);
    refused(await call(client, 'send_email', { ...args, subject: 'Other' }), 422, /Idempotency-Key/);
  });

  it('send_batch sends each good message, names the bad one, and replays the batch by its idempotency_key', async () => {
    const other = await makeTenant({ smtp: sink.url });
    const client = await connect(other.token);
    const args = { messages: [{ to: 'b1@example.org', subject: 'One', text: 'x' }, { to: 'not an address', subject: 'x', text: 'x' }, { to: 'b2@example.org', subject: 'Two', html: '<p>y</p>' }], idempotency_key: 'mcp-batch-1' };
    const first = ok(await call(client, 'send_batch', args));
    expect(first.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false, true]);
    expect(first.results[1].error).toMatch(/^to/);
    expect(ok(await call(client, 'send_batch', args))).toEqual({ ...first, replayed: true });
    expect(await db().message.count({ where: { accountId: other.account.id } })).toBe(2);
    await waitFor(() => sink.to('b1@example.org').length && sink.to('b2@example.org').length, { what: 'both copies on the wire' });
    expect([sink.to('b1@example.org')[0]!.parsed.subject, sink.to('b2@example.org')[0]!.parsed.subject]).toEqual(['One', 'Two']);
  });

  it('refuses as the API does: 400 for a bad address, 403 for another sender, 422 for nobody, 429 over the daily limit', async () => {
    const client = await connect(tenant.token);
    const http = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'not an address', subject: 'x', text: 'x' });
    expect(http.status).toBe(400);
    refused(await call(client, 'send_email', { to: 'not an address', subject: 'x', text: 'x' }), 400, http.body.error);
    refused(await call(client, 'send_email', { to: 'a@example.org', from: 'someone@else.example', subject: 'x', text: 'x' }), 403, /sends only from/);
    refused(await call(client, 'send_email', { to: [], subject: 'x', text: 'x' }), 422, /nobody|recipient/i);
    const used = await db().message.count({ where: { accountId: tenant.account.id } });
    const over = Array.from({ length: 6 - used }, (_, i) => `over${i}@example.org`);
    const limited = await call(client, 'send_email', { to: over, subject: 'x', text: 'x' });
    refused(limited, 429, /daily limit/, { retry_after: expect.any(Number) });
    // the seconds HTTP's Retry-After gives: until the next UTC midnight
    const untilMidnight = (Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1) - Date.now()) / 1000;
    expect(Math.abs(limited.structuredContent!.retry_after - untilMidnight)).toBeLessThan(60);
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(used);
    refused(await call(client, 'get_send_status', { id: '00000000-0000-4000-8000-000000000000' }), 404, /no send/);
  });

  it('list_lists, add_subscriber and remove_subscriber answer as the HTTP routes, with 404 for an unknown list', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false, name: 'Agents weekly' });
    const client = await connect(tenant.token);
    expect(ok(await call(client, 'add_subscriber', { list: list.key, email: 'Sub@Example.org', name: 'Sub', tags: 'a b' }))).toEqual({ ok: true, status: 'active' });
    expect(ok(await call(client, 'add_subscriber', { list: list.key, email: 'sub@example.org' }))).toEqual({ ok: true, status: 'exists' });
    const lists = ok(await call(client, 'list_lists'));
    expect(lists).toEqual((await as(ctx.api, tenant.token).get('/api/v1/lists')).body);
    expect(lists.lists).toContainEqual(expect.objectContaining({ key: list.key, subscribers: 1 }));
    expect(ok(await call(client, 'remove_subscriber', { list: list.key, email: 'sub@example.org' }))).toEqual({ ok: true, status: 'unsubscribed' });
    expect(ok(await call(client, 'remove_subscriber', { list: list.key, email: 'sub@example.org' }))).toEqual({ ok: true, status: 'gone' });
    refused(await call(client, 'add_subscriber', { list: 'no-such-list', email: 'a@example.org' }), 404, 'no list with key "no-such-list"');
    refused(await call(client, 'add_subscriber', { list: list.key, email: 'not-an-email' }), 400, /email/);
  });

  it('every tool refuses an argument it does not name with the 400 HTTP answers, and changes nothing', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false, name: 'Strict' });
    const client = await connect(tenant.token);
    const http = await as(ctx.api, tenant.token).post('/api/v1/subscribers').send({ list: list.key, email: 'typo@example.org', nmae: 'Ann' }).expect(400);
    refused(await call(client, 'add_subscriber', { list: list.key, email: 'typo@example.org', nmae: 'Ann' }), 400, http.body.error);
    expect(await db().subscriber.count({ where: { email: 'typo@example.org' } })).toBe(0);
    refused(await call(client, 'list_lists', { page: 2 }), 400, 'page is not allowed');
    refused(await call(client, 'get_send_status', { id: '00000000-0000-4000-8000-000000000000', verbose: true }), 400, 'verbose is not allowed');
  });

  it('campaign and prospect tools answer as the HTTP routes, with 404 and 409 refusals', async () => {
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { name: 'Agent outreach' });
    const client = await connect(tenant.token);
    const added = ok(await call(client, 'add_prospects', { campaign: campaign.id, prospects: [{ email: 'P@Example.org', name: 'Pat' }, { site: 'https://www.site.example/' }] }));
    expect(added).toMatchObject({ ok: true, added: 2 });
    expect(ok(await call(client, 'list_campaigns'))).toEqual((await as(ctx.api, tenant.token).get('/api/v1/campaigns')).body);
    const found = ok(await call(client, 'get_prospect', { campaign: campaign.id, email: 'p@example.org' }));
    expect(found).toEqual((await as(ctx.api, tenant.token).get(`/api/v1/prospects?campaign=${campaign.id}&email=p@example.org`)).body);
    expect(found.prospect).toMatchObject({ email: 'p@example.org', name: 'Pat', status: 'new' });
    refused(await call(client, 'report_prospect_state', { campaign: campaign.id, email: 'p@example.org', state: 'replied' }), 409, /no step/);
    const lost = ok(await call(client, 'report_prospect_state', { campaign: campaign.id, email: 'p@example.org', state: 'lost', reason: 'price' }));
    expect(lost.prospect).toMatchObject({ status: 'lost', reason: 'price' });
    refused(await call(client, 'report_prospect_state', { campaign: campaign.id, email: 'p@example.org', state: 'lost' }), 400, /lost needs a reason/);
    refused(await call(client, 'get_prospect', { campaign: 999999, email: 'p@example.org' }), 404, /campaign/);
  });

  it('has no campaign tools for a key without the permission: calling one anyway is a JSON-RPC error -32602, nothing runs', async () => {
    const plain = await makeTenant();
    const campaign = await makeCampaign(plain.account.id, plain.mailbox.id);
    const client = await connect(plain.token);
    await expect(call(client, 'add_prospects', { campaign: campaign.id, prospects: [{ email: 'x@example.org' }] })).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/Unknown tool: add_prospects/) });
    await expect(call(client, 'no_such_tool')).rejects.toMatchObject({ code: -32602 });
    expect(await db().prospect.count({ where: { campaignId: campaign.id } })).toBe(0);
    // on the wire: a JSON-RPC error object, not a result
    const raw = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${plain.token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }),
    });
    const body = (await raw.json()) as { id: number; error?: { code: number }; result?: unknown };
    expect(body).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(body.result).toBeUndefined();
  });
});
