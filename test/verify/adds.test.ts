import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

// verification on the way in: POST /subscribers, POST /prospects and imports (the worker's import queue, in-process)
useDns(['test'], [
  { type: 'MX', host: 'good.test', target: 'mx.good.test' },
  { type: 'A', host: 'mx.good.test', address: '127.0.0.1' },
  { type: 'MX', host: 'nomail.test', target: '.', priority: 0 },
]);
const app = useApi();
useMail({ queues: ['imports'] });

const verification = (result: string) => ({ result, checked_at: expect.any(String) });
const kept = async (email: string) => db().subscriber.findMany({ where: { email }, select: { verificationResult: true, verificationCheckedAt: true, status: true } });

describe('POST /api/v1/subscribers with verify', () => {
  it('flag adds the person whatever the result and keeps it on the row; block_undeliverable adds nobody undeliverable', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const add = (email: string, verify?: string) => as(app.api, tenant.token).post('/api/v1/subscribers').send({ list: list.key, email, verify });

    const flagged = await add('ann@nomail.test', 'flag');
    expect(flagged.status).toBe(200);
    expect(flagged.body).toMatchObject({ ok: true, status: 'active', verification: { email: 'ann@nomail.test', result: 'undeliverable', checks: { mx: 'null_mx' } } });
    expect(await kept('ann@nomail.test')).toEqual([{ status: 'active', verificationResult: 'undeliverable', verificationCheckedAt: expect.any(Date) }]);

    const blocked = await add('bob@nomail.test', 'block_undeliverable');
    expect(blocked.status).toBe(200);
    expect(blocked.body).toMatchObject({ ok: true, status: 'undeliverable', verification: { result: 'undeliverable', reasons: [expect.stringContaining('null MX')] } });
    expect(await kept('bob@nomail.test')).toEqual([]);

    const good = await add('cy@good.test', 'block_undeliverable');
    expect(good.body).toMatchObject({ status: 'active', verification: { result: 'deliverable' } });
    expect(await kept('cy@good.test')).toEqual([{ status: 'active', verificationResult: 'deliverable', verificationCheckedAt: expect.any(Date) }]);

    // without verify nothing is looked up or kept
    expect((await add('di@nomail.test')).body).toEqual({ ok: true, status: 'active' });
    expect(await kept('di@nomail.test')).toEqual([{ status: 'active', verificationResult: null, verificationCheckedAt: null }]);

    const bad = await add('eve@good.test', 'maybe');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ ok: false, error: expect.stringContaining('verify') });
    expect(await kept('eve@good.test')).toEqual([]);
    expect((await as(app.api, tenant.token).post('/api/v1/subscribers').send({ list: 'nope', email: 'f@good.test', verify: 'flag' })).status).toBe(404);
  });
});

describe('POST /api/v1/prospects with verify', () => {
  it('block_undeliverable answers an undeliverable address invalid with the reasons and adds it not; the others carry their result', async () => {
    const tenant = await makeTenant({ prospects: true });
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const res = await as(app.api, tenant.token)
      .post('/api/v1/prospects')
      .send({ campaign: campaign.id, verify: 'block_undeliverable', prospects: [{ email: 'ann@good.test' }, { email: 'bob@nomail.test' }, { email: 'info@good.test' }, { site: 'onlyasite.test' }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ added: 3, invalid: 1 });
    expect(res.body.prospects).toEqual([
      { contact: 'ann@good.test', result: 'added', id: expect.any(Number), verification: verification('deliverable') },
      { contact: 'bob@nomail.test', result: 'invalid', id: null, error: expect.stringMatching(/^undeliverable: .*null MX/), verification: verification('undeliverable') },
      { contact: 'info@good.test', result: 'added', id: expect.any(Number), verification: verification('risky') },
      { contact: 'onlyasite.test', result: 'added', id: expect.any(Number), verification: null },
    ]);
    expect(await db().prospect.count({ where: { campaignId: campaign.id, email: 'bob@nomail.test' } })).toBe(0);
    const looked = await as(app.api, tenant.token).get('/api/v1/prospects').query({ campaign: campaign.id, email: 'info@good.test' });
    expect(looked.body.prospect.verification).toEqual(verification('risky'));

    const flagged = await as(app.api, tenant.token).post('/api/v1/prospects').send({ campaign: campaign.id, verify: 'flag', prospects: [{ email: 'bob@nomail.test' }] });
    expect(flagged.body.prospects).toEqual([{ contact: 'bob@nomail.test', result: 'added', id: expect.any(Number), verification: verification('undeliverable') }]);
    expect(await db().prospect.findFirstOrThrow({ where: { campaignId: campaign.id, email: 'bob@nomail.test' } })).toMatchObject({ verificationResult: 'undeliverable' });

    const unknownCampaign = await as(app.api, tenant.token).post('/api/v1/prospects').send({ campaign: 999_999, verify: 'flag', prospects: [{ email: 'x@good.test' }] });
    expect(unknownCampaign.status).toBe(404);
  });
});

describe('imports with verify', () => {
  const upload = (listId: number, body: string, verify: string) =>
    asAdmin(app.api).post(`/admin/api/lists/${listId}/import`).query({ verify }).set('Content-Type', 'text/csv').send(body);
  const finished = (id: number) =>
    waitFor(
      async () => {
        const res = await asAdmin(app.api).get(`/admin/api/imports/${id}`);
        return res.body.import.status === 'done' ? res.body.import : undefined;
      },
      { timeout: 20_000, what: `import ${id}` },
    );

  it('block_undeliverable refuses the undeliverable lines with their reasons and counts every line by result; flag keeps them', async () => {
    const tenant = await makeTenant();
    const csv = 'email,name\nann@good.test,Ann\nbob@nomail.test,Bob\ninfo@good.test,Info\ncy@none.test,Cy\nann@good.test,Ann again\n';
    const blockList = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const started = await upload(blockList.id, csv, 'block_undeliverable');
    expect(started.status).toBe(202);
    const blocked = await finished(started.body.import.id);
    expect(blocked).toMatchObject({ verify: 'block_undeliverable', added: 2, refused: 2, verification: { deliverable: 2, undeliverable: 2, risky: 1 } });
    expect(blocked.errors).toEqual([
      { line: 3, reason: expect.stringMatching(/^undeliverable: .*null MX/) },
      { line: 5, reason: expect.stringMatching(/^undeliverable: .*no MX record and no address/) },
    ]);
    const rows = await db().subscriber.findMany({ where: { listId: blockList.id }, orderBy: { email: 'asc' }, select: { email: true, verificationResult: true } });
    expect(rows).toEqual([
      { email: 'ann@good.test', verificationResult: 'deliverable' },
      { email: 'info@good.test', verificationResult: 'risky' },
    ]);

    const flagList = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const flagged = await finished((await upload(flagList.id, csv, 'flag')).body.import.id);
    expect(flagged).toMatchObject({ verify: 'flag', added: 4, refused: 0, verification: { deliverable: 2, undeliverable: 2, risky: 1 } });
    expect(await db().subscriber.findFirstOrThrow({ where: { listId: flagList.id, email: 'bob@nomail.test' } })).toMatchObject({ verificationResult: 'undeliverable' });
  });

  it('npm run admin -- import FILE --verify block_undeliverable: the CLI asks the same, an unknown mode stores nothing', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'verify-import-')), 'people.csv');
    fs.writeFileSync(file, 'email\nann@good.test\nbob@nomail.test\n');
    const bad = runTs('scripts/admin.ts', ['import', file, '--list', String(list.id), '--verify', 'sometimes']);
    expect(await bad.exited).not.toBe(0);
    expect(bad.stderr() + bad.stdout()).toContain('verify');
    expect(await db().import.count({ where: { listId: list.id } })).toBe(0);
    const proc = runTs('scripts/admin.ts', ['import', file, '--list', String(list.id), '--verify', 'block_undeliverable']);
    expect(await proc.exited).toBe(0);
    expect(JSON.parse(proc.stdout()).import).toMatchObject({ status: 'done', added: 1, refused: 1, verify: 'block_undeliverable', verification: { deliverable: 1, undeliverable: 1 } });
  }, 60_000);

  it('refuses an unknown verify mode with 400 and stores nothing', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const res = await upload(list.id, 'email\nann@good.test\n', 'sometimes');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('verify') });
    expect(await db().import.count({ where: { listId: list.id } })).toBe(0);
  });
});

describe('MCP verify_addresses', () => {
  let server: Server;
  beforeAll(async () => {
    server = app.api.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers as POST /api/v1/verify, and refuses 101 addresses as it does', async () => {
    const tenant = await makeTenant();
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${tenant.token}` } } }));
    try {
      const emails = ['ann@good.test', 'bob@nomail.test', 'nope'];
      const result = (await client.callTool({ name: 'verify_addresses', arguments: { emails } })) as { isError?: boolean; structuredContent: Record<string, unknown> };
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual((await as(app.api, tenant.token).post('/api/v1/verify').send({ emails })).body);
      const many = (await client.callTool({ name: 'verify_addresses', arguments: { emails: Array.from({ length: 101 }, (_, i) => `a${i}@good.test`) } })) as { isError?: boolean; structuredContent: Record<string, unknown> };
      expect(many.isError).toBe(true);
      expect(many.structuredContent).toMatchObject({ ok: false, status: 400, error: 'emails: at most 100 addresses per request' });
    } finally {
      await client.close();
    }
  });
});
