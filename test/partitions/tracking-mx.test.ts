import request from 'supertest';
import { insertClick, upsertOpen } from '../../apps/core/src/analytics/repository';
import { db, rawQuery } from '../../apps/core/src/db';
import { idFloor, newId } from '../../apps/core/src/ids';
import { insertArrival } from '../../apps/core/src/mx/repository';
import { intervalStart } from '../../apps/core/src/partitions';
import { createPartition, listPartitions } from '../../apps/core/src/partitions/repository';
import { dropOldRecords } from '../../apps/core/src/retention';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';

/** Time partitions of the tracking tables (clicks, opens) and the MX's messages (docs/partitions.md). */
const ctx = useApi();
const DAY = 86_400_000;
const TABLES = ['link_clicks', 'message_opens', 'mx_messages'] as const;

const whereIs = async (table: string, column: string, id: string) =>
  (await rawQuery<{ part: string }>(db(), `SELECT tableoid::regclass::text AS part FROM ${table} WHERE ${column} = $1::uuid`, [id])).map((r) => r.part);
const tableExists = async (name: string) => (await rawQuery<{ n: number }>(db(), 'SELECT count(*)::int AS n FROM pg_class WHERE relname = $1', [name]))[0]!.n === 1;
const monthOf = (table: string, ms: number) => `${table}_p${new Date(intervalStart(ms, 'month')).toISOString().slice(0, 10).replace(/-/g, '')}`;

async function sentMessage(t: Tenant, id = newId(), sentAt = new Date(Date.now() - 60_000)): Promise<string> {
  await db().message.create({
    data: { id, accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'transactional', to: 'a@example.org', subject: 'S', messageIdHeader: `<${id}@example.com>`, status: 'sent', sentAt },
  });
  return id;
}

async function arrival(t: Tenant, id: string, status: 'delivered' | 'held', receivedAt = new Date()): Promise<void> {
  const row = {
    id, accountId: t.account.id, routeId: null, domain: 'in.example', status, reason: status === 'held' ? 'route' : null, hash: null, mailFrom: 's@example.org',
    rcptTo: ['x@in.example'], clientAddress: '127.0.0.1', helo: 'client', fromAddress: 's@example.org', subject: 'In', auth: {}, spam: null, receivedAt,
  };
  await insertArrival(db(), Buffer.from('Subject: In\r\n\r\nHi\r\n'), [row], []);
}

it('partitions clicks and opens by their email id on the bounds of messages, and the MX messages by their own id', async () => {
  const ranges = async (table: string) => (await listPartitions(db(), table as 'messages')).map((p) => `${p.from}-${p.to}`).sort();
  for (const table of TABLES) {
    const [kind] = await rawQuery<{ relkind: string }>(db(), 'SELECT relkind::text FROM pg_class WHERE relname = $1', [table]);
    expect(kind!.relkind).toBe('p');
    expect(await ranges(table)).toEqual(await ranges('messages'));
    expect(await tableExists(`${table}_default`)).toBe(true);
  }
});

it('records a click and an open in the partition of their email, counts a replay once, and reads one partition by the email id', async () => {
  const t = await makeTenant();
  const message = await sentMessage(t);
  expect(await insertClick(db(), { messageId: message, url: 'https://shop.example/', head: false }, 2000)).toEqual({ scanner: false, first: true });
  expect(await insertClick(db(), { messageId: message, url: 'https://shop.example/', head: false }, 2000)).toEqual({ scanner: false, first: false });
  await upsertOpen(db(), message);
  await upsertOpen(db(), message);
  expect(await whereIs('link_clicks', 'message_id', message)).toEqual([monthOf('link_clicks', Date.now())]);
  expect(await whereIs('message_opens', 'message_id', message)).toEqual([monthOf('message_opens', Date.now())]);
  const [click] = await rawQuery<{ count: number }>(db(), 'SELECT count FROM link_clicks WHERE message_id = $1::uuid', [message]);
  const [open] = await rawQuery<{ count: number }>(db(), 'SELECT count FROM message_opens WHERE message_id = $1::uuid', [message]);
  expect([click!.count, open!.count]).toEqual([2, 2]);
  const counted = await rawQuery<{ clicked: number; opened: number }>(db(), 'SELECT sum(clicked)::int AS clicked, sum(opened)::int AS opened FROM daily_counts WHERE account_id = $1', [t.account.id]);
  expect(counted[0]).toEqual({ clicked: 1, opened: 1 });
  const plan = (await rawQuery<{ 'QUERY PLAN': string }>(db(), `EXPLAIN SELECT * FROM link_clicks WHERE message_id = '${message}'`)).map((r) => r['QUERY PLAN']).join('\n');
  expect(new Set(plan.match(/link_clicks_(p\d+|default)/g))).toEqual(new Set([monthOf('link_clicks', Date.now())]));
  // the email's clicks and opens still go with it (ON DELETE CASCADE across partitioned tables)
  await db().message.delete({ where: { id: message } });
  expect([...(await whereIs('link_clicks', 'message_id', message)), ...(await whereIs('message_opens', 'message_id', message))]).toEqual([]);
});

it('writes an MX arrival to the current partition and reports the partitions in /metrics', async () => {
  const t = await makeTenant();
  const id = newId();
  await arrival(t, id, 'delivered');
  expect(await whereIs('mx_messages', 'id', id)).toEqual([monthOf('mx_messages', Date.now())]);
  const metrics = await request(ctx.api.app).get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
  for (const table of TABLES) expect(metrics.text).toMatch(new RegExp(`mailservice_db_partitions\\{table="${table}"\\} [1-9]`));
  expect(metrics.text).toContain('mailservice_db_partition_default_rows{table="link_clicks"} 0');
});

it('drops the clicks, opens and MX partitions wholly past RETENTION_DAYS, keeps one with a held MX message, and deletes old rows of the straddling one', async () => {
  const t = await makeTenant();
  const firstDay = intervalStart(Date.now() - 100 * DAY, 'day');
  for (const table of ['messages', ...TABLES] as const) {
    await createPartition(db(), table, `${table}_p_old1`, idFloor(firstDay), idFloor(firstDay + DAY));
    await createPartition(db(), table, `${table}_p_old2`, idFloor(firstDay + DAY), idFloor(firstDay + 2 * DAY));
  }
  const oldMessage = await sentMessage(t, newId(firstDay + 1000), new Date(firstDay + 1000));
  await insertClick(db(), { messageId: oldMessage, url: 'https://shop.example/', head: false }, 0);
  await upsertOpen(db(), oldMessage);
  await rawQuery(db(), `UPDATE link_clicks SET at = $2 WHERE message_id = $1::uuid`, [oldMessage, new Date(firstDay + 5000)]);
  await rawQuery(db(), `UPDATE message_opens SET first_at = $2, last_at = $2 WHERE message_id = $1::uuid`, [oldMessage, new Date(firstDay + 5000)]);
  const goneArrival = newId(firstDay + 2000);
  await arrival(t, goneArrival, 'delivered', new Date(firstDay + 2000));
  const heldArrival = newId(firstDay + DAY + 2000);
  await arrival(t, heldArrival, 'held', new Date(firstDay + DAY + 2000));
  // the straddling (current) partition: an arrival received long ago by its column is deleted as a row
  const straddling = newId();
  await arrival(t, straddling, 'delivered', new Date(Date.now() - 40 * DAY));
  const recent = newId();
  await arrival(t, recent, 'delivered');

  const dropped = await dropOldRecords(db());
  expect(dropped).toMatchObject({ mxMessages: 1 });
  for (const name of ['link_clicks_p_old1', 'link_clicks_p_old2', 'message_opens_p_old1', 'message_opens_p_old2', 'mx_messages_p_old1']) expect(await tableExists(name)).toBe(false);
  expect(await tableExists('mx_messages_p_old2')).toBe(true);
  const kept = await rawQuery<{ id: string }>(db(), 'SELECT id::text FROM mx_messages WHERE account_id = $1 ORDER BY id', [t.account.id]);
  expect(kept.map((r) => r.id)).toEqual([heldArrival, recent].sort());
  // the email keeps its row (MESSAGE_ROWS_DAYS is 0) and its partition; its click and open went with theirs
  expect(await db().message.count({ where: { id: oldMessage } })).toBe(1);
  expect(await db().linkClick.count({ where: { messageId: oldMessage } })).toBe(0);
  expect(await db().messageOpen.count({ where: { messageId: oldMessage } })).toBe(0);
});
