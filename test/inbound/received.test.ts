import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { db } from '../../apps/core/src/db';
import { classify } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { attachmentUrl } from '../../apps/core/src/inbound/received';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant, wantEvents } from '../helpers/factories';

// a small cap, so that one attachment of the test is over it (read once per process, before config() first runs)
process.env.INBOUND_ATTACHMENT_MAX_BYTES = '1000';

/** Inbound mail as events (docs/inbound-events.md): what is stored and handed on, once, and how it is read back. */
const ctx = useApi();
let server: Server | undefined;
afterAll(async () => {
  server?.closeAllConnections();
  if (server) await new Promise((resolve) => server!.close(resolve));
});

let uid = 0n;
async function read(mailboxId: number, raw: string | Buffer) {
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } });
  const source = Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
  uid += 1n;
  const where = { mailbox, uidValidity: 7n, uid, raw: source };
  await db().inboundCursor.upsert({ where: { mailboxId }, create: { mailboxId, uidValidity: 7n, lastUid: 0n }, update: {} });
  return { first: await handleInbound(db(), where, await classify(source)), again: await handleInbound(db(), where, await classify(source)) };
}

const events = (account: number) => db().event.findMany({ where: { accountId: account, type: 'message.received' }, orderBy: { createdAt: 'asc' } });

function withAttachments(parts: { name: string; type: string; bytes: Buffer }[]): string {
  return [
    'From: Someone <someone@reader.test>',
    'To: desk@service.test',
    'Subject: papers',
    'Message-ID: <papers@reader.test>',
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="B"',
    '',
    '--B',
    'Content-Type: multipart/alternative; boundary="C"',
    '',
    '--C',
    'Content-Type: text/plain',
    '',
    'See attached.',
    '--C',
    'Content-Type: text/html',
    '',
    '<p>See <b>attached</b>.</p><script>alert(1)</script>',
    '--C--',
    ...parts.flatMap((p) => ['--B', `Content-Type: ${p.type}; name="${p.name}"`, `Content-Disposition: attachment; filename="${p.name}"`, 'Content-Transfer-Encoding: base64', '', p.bytes.toString('base64')]),
    '--B--',
    '',
  ].join('\r\n');
}

it('a message becomes exactly one message.received, even when handled twice; an attachment over the cap is kept as metadata only', async () => {
  const tenant = await makeTenant();
  await wantEvents(tenant.account.id);
  const small = Buffer.from('hello file');
  const big = Buffer.alloc(5000, 7);
  const { first, again } = await read(tenant.mailbox.id, withAttachments([{ name: 'a.txt', type: 'text/plain', bytes: small }, { name: 'big.bin', type: 'application/octet-stream', bytes: big }]));
  expect(first).toMatchObject({ kind: 'other' });
  expect(again).toBeNull();
  const [event, ...more] = await events(tenant.account.id);
  expect(more).toEqual([]);
  const data = event!.data as Record<string, any>;
  expect(data).toMatchObject({ mailbox: tenant.mailbox.id, from: 'someone@reader.test', to: 'desk@service.test', subject: 'papers', text: expect.stringContaining('See attached.'), in_reply_to: {}, invalid: false });
  expect(data.html).toContain('<b>attached</b>');
  expect(data.attachments).toEqual([
    { filename: 'a.txt', content_type: 'text/plain', size: small.length, url: expect.stringMatching(/\/inbound\/files\/[0-9a-f-]+\?expires=\d+&signature=/) },
    { filename: 'big.bin', content_type: 'application/octet-stream', size: 5000, url: null },
  ]);
  expect((await db().inboundAttachment.findMany({ orderBy: { position: 'asc' }, where: { inboundMessage: { mailboxId: tenant.mailbox.id } } })).map((a) => a.content?.length ?? null)).toEqual([small.length, null]);

  const url = new URL(data.attachments[0].url);
  const file = await request(ctx.api.app).get(url.pathname + url.search).buffer(true).parse((res, done) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => done(null, Buffer.concat(chunks)));
  });
  expect(file.status).toBe(200);
  expect(file.body).toEqual(small);
  expect(file.headers['content-disposition']).toMatch(/^attachment/);
  // altered, expired, or without a signature: 404
  const id = url.pathname.split('/').pop()!;
  expect((await request(ctx.api.app).get(url.pathname + url.search.replace(/expires=\d+/, 'expires=9999999999'))).status).toBe(404);
  const expired = new URL(attachmentUrl(id, new Date(Date.now() - 1000)));
  expect((await request(ctx.api.app).get(expired.pathname + expired.search)).status).toBe(404);
  expect((await request(ctx.api.app).get(url.pathname)).status).toBe(404);

  const list = await asAdmin(ctx.api).get('/admin/api/inbound').query({ mailbox: tenant.mailbox.id });
  const inboundId = list.body.messages[0].id;
  expect(inboundId).toBe(data.id);
});

it('an email that is not valid MIME is kept raw and still handed on; a report is not a message.received', async () => {
  const tenant = await makeTenant();
  await wantEvents(tenant.account.id);
  const garbage = Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x62, 0x6c, 0x6f, 0x62]);
  await read(tenant.mailbox.id, garbage);
  const rows = await db().inboundMessage.findMany({ where: { mailboxId: tenant.mailbox.id } });
  expect(rows).toHaveLength(1);
  expect(Buffer.from(rows[0]!.raw!)).toEqual(garbage);
  const [event] = await events(tenant.account.id);
  expect(event!.data).toMatchObject({ invalid: true, from: '', attachments: [] });

  const report = [
    'From: MAILER-DAEMON@mx.reader.test', 'To: desk@service.test', 'Subject: Undelivered Mail Returned to Sender', 'Message-ID: <dsn1@mx.reader.test>',
    'MIME-Version: 1.0', 'Content-Type: multipart/report; report-type=delivery-status; boundary="R"', '',
    '--R', 'Content-Type: text/plain', '', 'failed', '--R', 'Content-Type: message/delivery-status', '',
    'Reporting-MTA: dns; mx.reader.test', '', 'Final-Recipient: rfc822; gone@reader.test', 'Action: failed', 'Status: 5.1.1', '', '--R--', '',
  ].join('\r\n');
  await read(tenant.mailbox.id, report);
  expect(await events(tenant.account.id)).toHaveLength(1);
});

it('GET /api/v1/inbound reads them by key, after an id; MCP list_inbound answers the same; another account sees none', async () => {
  const tenant = await makeTenant();
  const stranger = await makeTenant();
  for (let i = 1; i <= 3; i++) await read(tenant.mailbox.id, `From: r${i}@reader.test\r\nTo: desk@service.test\r\nSubject: note ${i}\r\nMessage-ID: <n${i}@reader.test>\r\n\r\nbody ${i}\r\n`);
  const first = await as(ctx.api, tenant.token).get('/api/v1/inbound?limit=2');
  expect(first.status).toBe(200);
  expect(first.body.messages.map((m: { subject: string }) => m.subject)).toEqual(['note 1', 'note 2']);
  expect(first.body.next).toBe(first.body.messages[1].id);
  const rest = await as(ctx.api, tenant.token).get(`/api/v1/inbound?after=${first.body.next}`);
  expect(rest.body).toMatchObject({ ok: true, messages: [expect.objectContaining({ subject: 'note 3', text: 'body 3\n' })], next: null });
  expect((await as(ctx.api, stranger.token).get('/api/v1/inbound')).body).toEqual({ ok: true, messages: [], next: null });
  expect((await as(ctx.api, tenant.token).get('/api/v1/inbound?after=-1')).status).toBe(400);

  server = ctx.api.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server!.once('listening', resolve));
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tenant.token}` } } }));
  try {
    const result = (await client.callTool({ name: 'list_inbound', arguments: { after: first.body.next } })) as { structuredContent: Record<string, any> };
    expect(result.structuredContent).toMatchObject({ ok: true, messages: [expect.objectContaining({ subject: 'note 3' })], next: null });
  } finally {
    await client.close();
  }
});

it('after RETENTION_DAYS an email goes with its body and attachments; its signed URL then answers 404', async () => {
  const tenant = await makeTenant();
  await wantEvents(tenant.account.id);
  await read(tenant.mailbox.id, withAttachments([{ name: 'keep.txt', type: 'text/plain', bytes: Buffer.from('kept a while') }]));
  const [event] = await events(tenant.account.id);
  const url = new URL((event!.data as { attachments: { url: string }[] }).attachments[0]!.url);
  expect((await request(ctx.api.app).get(url.pathname + url.search)).status).toBe(200);
  await db().inboundMessage.updateMany({ where: { mailboxId: tenant.mailbox.id }, data: { receivedAt: new Date(Date.now() - 31 * 86_400_000) } });
  const { dropOldRecords } = await import('../../apps/core/src/retention');
  await dropOldRecords(db());
  expect(await db().inboundMessage.count({ where: { mailboxId: tenant.mailbox.id } })).toBe(0);
  expect(await db().inboundAttachment.count({ where: { inboundMessage: { mailboxId: tenant.mailbox.id } } })).toBe(0);
  expect((await request(ctx.api.app).get(url.pathname + url.search)).status).toBe(404);
});
