import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { db } from '../../apps/core/src/db';
import { useListeningApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * Every change an MCP tool makes writes an audit entry (docs/teams.md), `via: mcp` with the key as actor and the
 * request's id: each tool the server lists (to a key with every permission) is called here, a changing one with
 * arguments it accepts. A tool listed without a call here fails the first test; a changing tool that writes no entry,
 * or a reading one that writes one, fails the second.
 */
jest.setTimeout(120_000);

const ctx = useListeningApi();
const base = () => `http://127.0.0.1:${ctx.port}`;

/** A client of its own per call, so each call's requests carry their own X-Request-Id. */
async function call(token: string, requestId: string, name: string, args: Record<string, unknown>) {
  const client = new Client({ name: 'audit-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base()}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}`, 'X-Request-Id': requestId } } }));
  try {
    return (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Record<string, any> };
  } finally {
    await client.close();
  }
}

interface Fixture {
  tenant: Tenant;
  list: string;
  campaign: number;
  send?: string;
}

const future = () => new Date(Date.now() + 3_600_000).toISOString();

/** The changing tools, in an order where each finds what it needs; the reading ones with the arguments they read. */
const CHANGES: [string, (f: Fixture) => Record<string, unknown>][] = [
  ['send_email', (f) => ({ to: 'reader@example.org', from: f.tenant.mailbox.address, subject: 'Later', text: 'x', send_at: future() })],
  ['reschedule_send', (f) => ({ id: f.send, send_at: future() })],
  ['cancel_send', (f) => ({ id: f.send })],
  ['send_batch', () => ({ messages: [{ to: 'one@example.org', subject: 'One', text: 'x', send_at: future() }] })],
  ['add_subscriber', (f) => ({ list: f.list, email: 'sub@example.org', name: 'Sub' })],
  ['remove_subscriber', (f) => ({ list: f.list, email: 'sub@example.org' })],
  ['add_prospects', (f) => ({ campaign: f.campaign, prospects: [{ email: 'pat@example.org', name: 'Pat' }] })],
  ['report_prospect_state', (f) => ({ campaign: f.campaign, email: 'pat@example.org', state: 'stop' })],
];
const READS: [string, (f: Fixture) => Record<string, unknown>][] = [
  ['get_send_status', (f) => ({ id: f.send })],
  ['list_lists', () => ({})],
  ['list_inbound', () => ({})],
  ['verify_addresses', () => ({ emails: ['someone@example.org'] })],
  ['list_campaigns', () => ({})],
  ['get_prospect', (f) => ({ campaign: f.campaign, email: 'pat@example.org' })],
];

let f: Fixture;
beforeAll(async () => {
  const tenant = await makeTenant({ prospects: true });
  f = { tenant, list: (await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false })).key, campaign: (await makeCampaign(tenant.account.id, tenant.mailbox.id)).id };
});

it('has a call for every tool the server lists', async () => {
  const client = new Client({ name: 'audit-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base()}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${f.tenant.token}` } } }));
  const listed = (await client.listTools()).tools.map((t) => t.name).sort();
  await client.close();
  expect([...CHANGES, ...READS].map(([name]) => name).sort()).toEqual(listed);
});

it('writes one entry, via mcp, with the key as actor and the request id, for every change; none for a read or a replay', async () => {
  const missing: string[] = [];
  for (const [name, args] of CHANGES) {
    const requestId = `mcp-${randomUUID()}`;
    const result = await call(f.tenant.token, requestId, name, args(f));
    if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.structuredContent)}`);
    if (name === 'send_email') f.send = result.structuredContent!.id as string;
    const entries = await db().auditEntry.findMany({ where: { requestId } });
    if (entries.length !== 1) missing.push(`${name}: ${entries.length} entries`);
    else expect(entries[0]).toMatchObject({ via: 'mcp', actorKind: 'key', actorId: f.tenant.keyId, actorLabel: expect.stringMatching(/…/), accountId: f.tenant.account.id, ip: expect.any(String) });
  }
  expect(missing).toEqual([]);
  const sent = await db().auditEntry.findFirstOrThrow({ where: { via: 'mcp', action: 'send' } });
  expect(sent.resourceId).toBe(f.send);

  const before = await db().auditEntry.count();
  for (const [name, args] of READS) {
    const result = await call(f.tenant.token, `mcp-${randomUUID()}`, name, args(f));
    if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.structuredContent)}`);
  }
  // a replay changes nothing again; a refusal changes nothing
  const replay = { to: 'again@example.org', subject: 'Once', text: 'x', idempotency_key: `once-${randomUUID()}` };
  expect((await call(f.tenant.token, `mcp-${randomUUID()}`, 'send_email', replay)).isError).toBeFalsy();
  const count = await db().auditEntry.count();
  expect(count).toBe(before + 1);
  expect((await call(f.tenant.token, `mcp-${randomUUID()}`, 'send_email', replay)).structuredContent).toMatchObject({ replayed: true });
  expect((await call(f.tenant.token, `mcp-${randomUUID()}`, 'add_subscriber', { list: 'no-such-list', email: 'a@example.org' })).isError).toBe(true);
  expect(await db().auditEntry.count()).toBe(count);
});
