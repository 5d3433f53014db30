import crypto from 'node:crypto';
import { Client } from 'pg';
import { createDb, db, rawQuery } from '../../apps/core/src/db';
import { claimInbound, insertAttachments } from '../../apps/core/src/inbound/repository';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { migrate } from '../../apps/core/src/migrate';
import { boundAt, dropOldPartitions, intervalStart } from '../../apps/core/src/partitions';
import { createPartition } from '../../apps/core/src/partitions/repository';
import { makeTenant } from '../helpers/factories';
import { usePreviousSchema } from '../helpers/previous-schema';

/**
 * Inbound emails read over IMAP partitioned by time (docs/partitions.md): ids that carry their time, the
 * (mailbox, uidvalidity, uid) claim in a table of its own, retention by DROP, and the upgrade of a filled table.
 */
const DAY = 86_400_000;
const monthOf = (ms: number) => `inbound_messages_p${new Date(intervalStart(ms, 'month')).toISOString().slice(0, 10).replace(/-/g, '')}`;
const header = (mailboxId: number, uid: number, receivedAt = new Date()) => ({
  mailboxId,
  uidValidity: 7n,
  uid: BigInt(uid),
  from: 'reader@example.org',
  subject: 'Re: hello',
  messageId: `<${uid}@example.org>`,
  receivedAt,
});
const attachment = (inboundId: number) => ({
  id: crypto.randomUUID(),
  inbound_message_id: inboundId,
  position: 0,
  filename: 'a.txt',
  content_type: 'text/plain',
  size: 2,
  content: Buffer.from('hi'),
});
const count = async (text: string, values: unknown[] = []) => (await rawQuery<{ n: number }>(db(), text, values))[0]!.n;

it('gives an inbound email an id of its time in the current partition, read by id from that one partition, and claims its uid once', async () => {
  const t = await makeTenant();
  const before = Date.now();
  const id = await claimInbound(db(), header(t.mailbox.id, 1));
  expect(id).toBeDefined();
  expect(Math.floor(id! / 1000)).toBeGreaterThanOrEqual(before);
  expect(Math.floor(id! / 1000)).toBeLessThanOrEqual(Date.now());
  const [row] = await rawQuery<{ part: string }>(db(), 'SELECT tableoid::regclass::text AS part FROM inbound_messages WHERE id = $1', [id]);
  expect(row!.part).toBe(monthOf(Date.now()));
  const plan = (await rawQuery<{ 'QUERY PLAN': string }>(db(), `EXPLAIN SELECT * FROM inbound_messages WHERE id = ${id}`)).map((r) => r['QUERY PLAN']).join('\n');
  expect(new Set(plan.match(/inbound_messages_(p\d+|default)/g))).toEqual(new Set([monthOf(Date.now())]));
  // the same uid again (another reader, or an earlier run): not claimed, nothing written
  expect(await claimInbound(db(), header(t.mailbox.id, 1))).toBeUndefined();
  expect(await count('SELECT count(*)::int AS n FROM inbound_messages WHERE mailbox_id = $1', [t.mailbox.id])).toBe(1);
  expect(await count('SELECT count(*)::int AS n FROM inbound_uids WHERE mailbox_id = $1 AND inbound_message_id = $2', [t.mailbox.id, id])).toBe(1);
});

it('drops a month of inbound emails past RETENTION_DAYS with their attachments and uid claims, and keeps the recent ones', async () => {
  const t = await makeTenant();
  const firstDay = intervalStart(Date.now() - 200 * DAY, 'day');
  await createPartition(db(), 'inbound_messages', 'inbound_messages_p_old1', boundAt('inbound_messages', firstDay), boundAt('inbound_messages', firstDay + DAY));
  const old = Number(boundAt('inbound_messages', firstDay + 1000));
  await rawQuery(db(), `INSERT INTO inbound_messages (id, mailbox_id, uid_validity, uid, kind, received_at) VALUES ($1, $2, 7, 100, 'reply', $3)`, [old, t.mailbox.id, new Date(firstDay + 1000)]);
  await rawQuery(db(), `INSERT INTO inbound_uids (mailbox_id, uid_validity, uid, inbound_message_id) VALUES ($1, 7, 100, $2)`, [t.mailbox.id, old]);
  await insertAttachments(db(), [attachment(old)]);
  const recent = (await claimInbound(db(), header(t.mailbox.id, 101)))!;
  await insertAttachments(db(), [attachment(recent)]);

  expect(await dropOldPartitions(db(), 'inbound_messages', new Date(Date.now() - 30 * DAY))).toEqual(['inbound_messages_p_old1']);
  expect(await count(`SELECT count(*)::int AS n FROM pg_class WHERE relname = 'inbound_messages_p_old1'`)).toBe(0);
  for (const [table, column] of [['inbound_attachments', 'inbound_message_id'], ['inbound_uids', 'inbound_message_id']]) {
    expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [old])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [recent])).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM ${table} r WHERE NOT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.id = r.${column})`)).toBe(0);
  }
});

describe('upgrading a filled table', () => {
  const previous = usePreviousSchema('20261202050100_inbound_partitions', 'inbound_upgrade');

  it('keeps every row, id, attachment and uid claim, and gives the next email an id of its time', async () => {
    const url = previous.url;
    const pg = new Client({ connectionString: url });
    await pg.connect();
    try {
      await upgradeFilled(url, pg);
    } finally {
      await pg.end();
    }
  });
});

/** Fills inbound_messages as the previous schema made it, migrates, and checks what moved. */
async function upgradeFilled(url: string, pg: Client): Promise<void> {
  const { rows: [account] } = await pg.query<{ id: number }>(`INSERT INTO accounts (name) VALUES ('upgraded') RETURNING id`);
  const old = createDb(url, 1);
  const mailbox = await createMailbox(old, { account: account!.id, address: 'in@example.com', name: 'In', smtp: 'smtp://127.0.0.1:2525' }).finally(() => old.$disconnect());
  const ids: number[] = [];
  for (let uid = 1; uid <= 3; uid++) {
    const { rows } = await pg.query<{ id: number }>(
      `INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind, subject) VALUES ($1, 7, $2, 'reply', 'S') RETURNING id`,
      [mailbox.id, uid],
    );
    ids.push(rows[0]!.id);
  }
  await pg.query(`INSERT INTO inbound_attachments (id, inbound_message_id, position, size) VALUES (gen_random_uuid(), $1, 0, 1)`, [ids[0]]);

  await migrate(url);

  const { rows: moved } = await pg.query<{ id: string; part: string }>(`SELECT id::text, tableoid::regclass::text AS part FROM inbound_messages ORDER BY id`);
  expect(moved).toEqual(ids.map((id) => ({ id: String(id), part: 'inbound_messages_default' })));
  const { rows: claims } = await pg.query<{ uid: string; id: string }>(`SELECT uid::text, inbound_message_id::text AS id FROM inbound_uids ORDER BY uid`);
  expect(claims).toEqual(ids.map((id, i) => ({ uid: String(i + 1), id: String(id) })));
  const { rows: files } = await pg.query<{ id: string }>(`SELECT inbound_message_id::text AS id FROM inbound_attachments`);
  expect(files).toEqual([{ id: String(ids[0]) }]);
  // a uid read before is still claimed; the next email's id carries its time and sorts after the old ones
  const { rows: again } = await pg.query(
    `WITH claim AS (INSERT INTO inbound_uids (mailbox_id, uid_validity, uid, inbound_message_id) VALUES ($1, 7, 1, inbound_id()) ON CONFLICT DO NOTHING RETURNING 1) SELECT * FROM claim`,
    [mailbox.id],
  );
  expect(again).toEqual([]);
  const { rows: [next] } = await pg.query<{ id: string }>(
    `INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind) VALUES ($1, 7, 4, 'reply') RETURNING id::text`,
    [mailbox.id],
  );
  expect(Math.abs(Number(next!.id) / 1000 - Date.now())).toBeLessThan(60_000);
}
