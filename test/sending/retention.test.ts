import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { dropOldContent } from '../../apps/core/src/retention';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/** RETENTION_DAYS (30 by default): old finished emails lose their content, never their rows. */
const ctx = useApi();
const DAY = 86_400_000;

async function own(tenant: Awaited<ReturnType<typeof makeTenant>>, status: 'sent' | 'queued' | 'failed', ageDays: number) {
  const id = crypto.randomUUID();
  await db().message.create({
    data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'confirmation', to: `${id.slice(0, 6)}@example.org`, subject: 'Confirm', text: 'click https://x/confirm/secret', html: '<a href="https://x/confirm/secret">confirm</a>', messageIdHeader: `<${id}@example.com>`, status },
  });
  await db().$executeRaw`UPDATE messages SET updated_at = now() - ${ageDays * DAY}::float8 * interval '1 millisecond' WHERE id = ${id}::uuid`;
  return id;
}

it('drops the bodies of emails finished over 30 days ago, keeps their rows, and leaves the rest alone', async () => {
  const tenant = await makeTenant();
  const oldSent = await own(tenant, 'sent', 31);
  const oldFailed = await own(tenant, 'failed', 45);
  const recent = await own(tenant, 'sent', 5);
  const oldQueued = await own(tenant, 'queued', 40);
  // a Send of two copies: its shared content goes once both are finished and old
  const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: ['a@example.org', 'b@example.org'], subject: 'Report', text: 'numbers', attachments: [{ filename: 'r.txt', content: Buffer.from('data').toString('base64') }] });
  expect(res.status).toBe(202);
  const copies = await db().message.findMany({ where: { sendId: res.body.id } });
  await db().$executeRaw`UPDATE sends SET created_at = now() - interval '40 days' WHERE id = ${res.body.id}::uuid`;
  await db().$executeRaw`UPDATE messages SET status = 'sent', updated_at = now() - interval '40 days' WHERE id = ${copies[0]!.id}::uuid`;

  expect(await dropOldContent(db())).toEqual({ messages: 2, sends: 0 });
  const byId = async (id: string) => db().message.findUniqueOrThrow({ where: { id } });
  for (const id of [oldSent, oldFailed]) expect(await byId(id)).toMatchObject({ text: null, html: null, subject: 'Confirm', status: expect.any(String) });
  for (const id of [recent, oldQueued]) expect((await byId(id)).text).toMatch(/secret/);
  // one copy still queued: the Send keeps its content
  expect((await db().send.findUniqueOrThrow({ where: { id: res.body.id } })).text).toBe('numbers');

  await db().$executeRaw`UPDATE messages SET status = 'bounced', updated_at = now() - interval '40 days' WHERE id = ${copies[1]!.id}::uuid`;
  expect(await dropOldContent(db())).toEqual({ messages: 0, sends: 1 });
  expect(await db().send.findUniqueOrThrow({ where: { id: res.body.id } })).toMatchObject({ text: null, html: null, attachments: [], subject: 'Report' });
  // idempotent
  expect(await dropOldContent(db())).toEqual({ messages: 0, sends: 0 });
  expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(6);
  // the public status of the send still answers
  expect((await as(ctx.api, tenant.token).get(`/api/v1/send/${res.body.id}`)).status).toBe(200);
});
