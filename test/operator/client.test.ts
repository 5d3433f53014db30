import { spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { mailserviceClient } from '../../clients/typescript';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';

/** The typed client generated from the OpenAPI document (clients/typescript), against the running API. */
const ctx = useApi();
let server: http.Server;
let base = '';
beforeAll(async () => {
  server = http.createServer(ctx.api.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

it('sends, subscribes and adds prospects through the generated client', async () => {
  const tenant = await makeTenant({ prospects: true });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
  const api = mailserviceClient(base, tenant.token);

  const sent = await api.POST('/send', { body: { to: 'someone@example.com', subject: 'Hello', text: 'Hi there', metadata: { order: 42 } } });
  expect(sent.response.status).toBe(202);
  expect(sent.data?.status).toBe('queued');
  const status = await api.GET('/send/{id}', { params: { path: { id: sent.data!.id } } });
  expect(status.data?.id).toBe(sent.data!.id);

  const subscribed = await api.POST('/subscribers', { body: { list: list.key, email: 'reader@example.org', name: 'Reader', fields: { city: 'Oslo' } } });
  expect(subscribed.response.status).toBe(200);
  expect(await db().subscriber.count({ where: { listId: list.id, email: 'reader@example.org' } })).toBe(1);

  const added = await api.POST('/prospects', { body: { campaign: campaign.id, prospects: [{ email: 'pat@site.example', name: 'Pat' }] } });
  expect(added.response.status).toBe(200);
  const found = await api.GET('/prospects', { params: { query: { campaign: campaign.id, email: 'pat@site.example' } } });
  expect(found.data?.prospect).toMatchObject({ email: 'pat@site.example', name: 'Pat' });

  // a refusal comes back as `error`, typed as the document's refusal
  const refused = await api.POST('/send', { body: { to: 'someone@example.com', subject: 'Hello' } as never });
  expect(refused.response.status).toBe(400);
  expect(refused.error).toEqual({ ok: false, error: expect.any(String) });
});

it('the committed client types are what the document gives now (npm run client)', () => {
  const root = path.resolve(__dirname, '../..');
  const check = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/client.ts'), '--check'], { cwd: root, encoding: 'utf8' });
  expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
});
