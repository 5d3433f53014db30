import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';

/** Keys with scopes, allowed From domains and an end (docs/teams.md), through the admin API and the public API. */
const ctx = useApi();

async function key(account: number, mailbox: number, extra: Record<string, unknown>) {
  const res = await asAdmin(ctx.api).post('/admin/api/keys').send({ account, mailbox, name: 'scoped', daily_limit: 100, ...extra });
  expect(res.status).toBe(201);
  return res.body.key as { id: number; token: string; scopes: string[]; domains: string[]; expires_at: string | null };
}

const send = (token: string) => as(ctx.api, token).post('/api/v1/send').send({ to: 'someone@example.org', subject: 'Hi', text: 'Hello' });

it('answers 403 naming the scope a key lacks, in the fast lane and through Express alike', async () => {
  const tenant = await makeTenant();
  const subscribersOnly = await key(tenant.account.id, tenant.mailbox.id, { scopes: ['subscribers'] });
  expect(subscribersOnly.scopes).toEqual(['subscribers']);
  const refused = await send(subscribersOnly.token);
  expect(refused.status).toBe(403);
  expect(refused.body).toEqual({ ok: false, error: 'this key lacks the scope send' });
  // with an Idempotency-Key the send goes through Express, not the lane
  const viaExpress = await as(ctx.api, subscribersOnly.token).post('/api/v1/send').set('Idempotency-Key', 'scoped-key-idempotency-0001').send({ to: 'a@example.org', subject: 'Hi', text: 'Hello' });
  expect(viaExpress.body.error).toBe('this key lacks the scope send');
  expect((await as(ctx.api, subscribersOnly.token).get('/api/v1/templates')).body.error).toBe('this key lacks the scope templates');

  const sendAndRead = await key(tenant.account.id, tenant.mailbox.id, { scopes: ['send', 'read'] });
  expect((await send(sendAndRead.token)).status).toBe(202);
  // read lets a key see, not change
  expect((await as(ctx.api, sendAndRead.token).get('/api/v1/templates')).status).toBe(200);
  expect((await as(ctx.api, sendAndRead.token).get('/api/v1/lists')).status).toBe(200);
  expect((await as(ctx.api, sendAndRead.token).post('/api/v1/subscribers').send({ list: 'news', email: 'x@example.org' })).body.error).toBe('this key lacks the scope subscribers');
});

it('refuses an unknown scope, a past end and a bad domain with 400, making no key', async () => {
  const tenant = await makeTenant();
  const admin = asAdmin(ctx.api);
  const base = { account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'bad', daily_limit: 1 };
  const before = (await admin.get('/admin/api/keys')).body.keys.length;
  const unknown = await admin.post('/admin/api/keys').send({ ...base, scopes: ['send', 'everything'] });
  expect(unknown.status).toBe(400);
  expect(unknown.body.error).toMatch(/scopes\[1\] must be one of \[send, subscribers, prospects, templates, inbound, read\]/);
  const past = await admin.post('/admin/api/keys').send({ ...base, expires_at: '2020-01-01T00:00:00Z' });
  expect(past.status).toBe(400);
  expect(past.body.error).toMatch(/expires_at/);
  const domain = await admin.post('/admin/api/keys').send({ ...base, domains: ['not a domain'] });
  expect(domain.status).toBe(400);
  expect((await admin.get('/admin/api/keys')).body.keys.length).toBe(before);
});

it('answers 401 "key expired" once the end has come, from the cache too, and shows the last use', async () => {
  const tenant = await makeTenant();
  const soon = await key(tenant.account.id, tenant.mailbox.id, { expires_at: new Date(Date.now() + 1500).toISOString() });
  expect((await send(soon.token)).status).toBe(202);
  const listed = (await asAdmin(ctx.api).get('/admin/api/keys')).body.keys.find((k: { id: number }) => k.id === soon.id);
  expect(listed.last_used_at).toEqual(expect.any(String));
  expect(listed.expires_at).toBe(soon.expires_at);
  await waitFor(async () => (await send(soon.token)).status === 401, { what: 'the key to expire', timeout: 10_000 });
  const expired = await send(soon.token);
  expect(expired.body).toEqual({ ok: false, error: 'key expired' });
});

it('sends only from the domains a key was given', async () => {
  const tenant = await makeTenant();
  const elsewhere = await key(tenant.account.id, tenant.mailbox.id, { domains: ['other.example'] });
  const refused = await send(elsewhere.token);
  expect(refused.status).toBe(403);
  expect(refused.body.error).toBe('from: this key may send only from other.example');
  const own = await key(tenant.account.id, tenant.mailbox.id, { domains: ['EXAMPLE.com'] });
  expect(own.domains).toEqual(['example.com']);
  expect((await send(own.token)).status).toBe(202);
});

it('refuses an MCP tool outside the key\'s scopes with the same words', async () => {
  const tenant = await makeTenant();
  const readOnly = await key(tenant.account.id, tenant.mailbox.id, { scopes: ['read'] });
  const server = ctx.api.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const client = new Client({ name: 'scoped-agent', version: '1.0.0' });
  try {
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${readOnly.token}` } } }));
    const sent = (await client.callTool({ name: 'send_email', arguments: { to: 'a@example.org', subject: 'Hi', text: 'Hello' } })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
    expect(sent.isError).toBe(true);
    expect(sent.structuredContent).toMatchObject({ ok: false, error: 'this key lacks the scope send', status: 403 });
    const lists = (await client.callTool({ name: 'list_lists', arguments: {} })) as { isError?: boolean };
    expect(lists.isError).toBeFalsy();
  } finally {
    await client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
