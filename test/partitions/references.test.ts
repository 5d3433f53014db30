import { Client } from 'pg';
import { db, rawQuery } from '../../apps/core/src/db';
import { idFloor, newId } from '../../apps/core/src/ids';
import { dropOldPartitions, intervalStart } from '../../apps/core/src/partitions';
import { createPartition } from '../../apps/core/src/partitions/repository';
import { makeCampaign, makeList, makeTenant, type Tenant } from '../helpers/factories';
import { databaseUrl } from '../setup/shared';

/**
 * References to messages kept by triggers, not foreign keys (docs/partitions.md, "References to messages"): a row
 * naming a message not present is refused, a message's rows go with it, whether it is deleted or its month dropped,
 * and no row is left pointing at nothing.
 */
const DAY = 86_400_000;
const REFERENCING = ['message_attempts', 'link_clicks', 'message_opens', 'sandbox_messages', 'message_steps', 'broadcast_copies'];

interface Fixture {
  t: Tenant;
  prospect: number;
  broadcast: number;
  subscriber: number;
}

async function fixture(): Promise<Fixture> {
  const t = await makeTenant();
  const campaign = await makeCampaign(t.account.id, t.mailbox.id);
  const prospect = await db().prospect.create({ data: { campaignId: campaign.id, email: `p${Date.now()}@example.org` } });
  const list = await makeList(t.account.id, t.mailbox.id);
  const subscriber = await db().subscriber.create({ data: { listId: list.id, email: 'reader@example.org', status: 'active' } });
  const [broadcast] = await rawQuery<{ id: number }>(db(), `INSERT INTO broadcasts (account_id, list_id, subject, text, status, updated_at) VALUES ($1, $2, 'S', 'T', 'sending', now()) RETURNING id`, [t.account.id, list.id]);
  return { t, prospect: prospect.id, broadcast: broadcast!.id, subscriber: subscriber.id };
}

/** One row of each referencing table naming the message: the statements, in REFERENCING's order. */
function rowsOf(f: Fixture, message: string, step: number): [string, unknown[]][] {
  return [
    [`INSERT INTO message_attempts (message_id, attempt, outcome, response) VALUES ($1, 1, 'deferred', '451 later')`, [message]],
    [`INSERT INTO link_clicks (message_id, account_id, url) VALUES ($1, $2, 'https://shop.example/')`, [message, f.t.account.id]],
    [`INSERT INTO message_opens (message_id, account_id) VALUES ($1, $2)`, [message, f.t.account.id]],
    [`INSERT INTO sandbox_messages (message_id, raw) VALUES ($1, 'raw')`, [message]],
    [`INSERT INTO message_steps (prospect_id, step, message_id) VALUES ($1, $2, $3)`, [f.prospect, step, message]],
    [`INSERT INTO broadcast_copies (broadcast_id, subscriber_id, message_id) VALUES ($1, $2, $3)`, [f.broadcast, f.subscriber + step * 1_000_000, message]],
  ];
}

async function insertMessage(t: Tenant, id: string) {
  await rawQuery(db(), `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status) VALUES ($1::uuid, $2, $3, 'transactional', 'a@example.org', 'S', '<' || $1::text || '@x>', 'sent')`, [id, t.account.id, t.mailbox.id]);
}

const count = async (table: string, message: string) => (await rawQuery<{ n: number }>(db(), `SELECT count(*)::int AS n FROM ${table} WHERE message_id = $1::uuid`, [message]))[0]!.n;
const orphans = async (table: string) =>
  (await rawQuery<{ n: number }>(db(), `SELECT count(*)::int AS n FROM ${table} r WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)`))[0]!.n;

async function connect(): Promise<Client> {
  const client = new Client({ connectionString: databaseUrl(process.env.MS_TEST_DATABASE!) });
  await client.connect();
  return client;
}

it('has the six referencing tables, each named by the delete trigger of messages', async () => {
  const tables = await rawQuery<{ rel: string }>(db(), `SELECT tgrelid::regclass::text AS rel FROM pg_trigger WHERE tgfoid = 'message_reference'::regproc AND tgparentid = 0`);
  expect(tables.map((t) => t.rel).sort()).toEqual([...REFERENCING].sort());
  const [source] = await rawQuery<{ src: string }>(db(), `SELECT prosrc AS src FROM pg_proc WHERE proname = 'message_references_delete'`);
  for (const table of REFERENCING) expect(source!.src).toContain(`DELETE FROM ${table} WHERE message_id = OLD.id;`);
});

it('refuses a row of each referencing table that names a message not present (23503), and writes nothing', async () => {
  const f = await fixture();
  const missing = newId();
  const client = await connect();
  try {
    for (const [text, values] of rowsOf(f, missing, 1)) {
      await expect(client.query(text, values)).rejects.toMatchObject({ code: '23503' });
    }
    // an existing row moved onto a missing message is refused too
    const present = newId();
    await insertMessage(f.t, present);
    const [attempt, values] = rowsOf(f, present, 2)[0]!;
    await client.query(attempt, values);
    await expect(client.query('UPDATE message_attempts SET message_id = $1 WHERE message_id = $2', [missing, present])).rejects.toMatchObject({ code: '23503' });
  } finally {
    await client.end();
  }
  for (const table of REFERENCING) expect(await count(table, missing)).toBe(0);
});

it('deletes a message with its rows in every referencing table', async () => {
  const f = await fixture();
  const message = newId();
  const kept = newId();
  await insertMessage(f.t, message);
  await insertMessage(f.t, kept);
  for (const [text, values] of rowsOf(f, message, 3)) await rawQuery(db(), text, values);
  for (const [text, values] of rowsOf(f, kept, 4)) await rawQuery(db(), text, values);
  await rawQuery(db(), 'DELETE FROM messages WHERE id = $1', [message]);
  for (const table of REFERENCING) {
    expect(await count(table, message)).toBe(0);
    expect(await count(table, kept)).toBe(1);
  }
});

it('lets a delete of a message wait for a row naming it that is being written, then takes the row; a row written after the delete is refused', async () => {
  const f = await fixture();
  const writer = await connect();
  const deleter = await connect();
  try {
    const first = newId();
    await insertMessage(f.t, first);
    const [attempt, attemptValues] = rowsOf(f, first, 5)[0]!;
    await writer.query('BEGIN');
    await writer.query(attempt, attemptValues);
    const deleting = deleter.query('DELETE FROM messages WHERE id = $1', [first]);
    // the delete waits on the row's lock, so the attempt commits first and the delete's trigger then sees it
    await new Promise((resolve) => setTimeout(resolve, 300));
    await writer.query('COMMIT');
    expect((await deleting).rowCount).toBe(1);
    expect(await count('message_attempts', first)).toBe(0);

    const second = newId();
    await insertMessage(f.t, second);
    await deleter.query('BEGIN');
    await deleter.query('DELETE FROM messages WHERE id = $1', [second]);
    // its refusal may come before the COMMIT's answer: caught at once
    const writing = writer.query(attempt, [second]).then(
      () => null,
      (err: { code?: string }) => err,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await deleter.query('COMMIT');
    expect(await writing).toMatchObject({ code: '23503' });
  } finally {
    await writer.end();
    await deleter.end();
  }
  expect(await orphans('message_attempts')).toBe(0);
});

it('drops a month of messages with the same month of attempts, clicks and opens, deletes its sandbox copies and keys, and leaves no row pointing at nothing', async () => {
  const f = await fixture();
  const firstDay = intervalStart(Date.now() - 200 * DAY, 'day');
  for (const table of ['messages', 'message_attempts', 'link_clicks', 'message_opens'] as const) {
    await createPartition(db(), table, `${table}_p_refs`, idFloor(firstDay), idFloor(firstDay + DAY));
  }
  const old = newId(firstDay + 1000);
  const recent = newId();
  await insertMessage(f.t, old);
  await insertMessage(f.t, recent);
  for (const [text, values] of rowsOf(f, old, 7)) await rawQuery(db(), text, values);
  for (const [text, values] of rowsOf(f, recent, 8)) await rawQuery(db(), text, values);
  // finished in its month: nothing in the partition is still kept
  await rawQuery(db(), 'UPDATE messages SET updated_at = $2 WHERE id = $1', [old, new Date(firstDay + 2000)]);

  expect(await dropOldPartitions(db(), 'messages', new Date(firstDay + DAY))).toEqual(['messages_p_refs']);
  const left = await rawQuery<{ relname: string }>(db(), `SELECT relname FROM pg_class WHERE relname LIKE '%\\_p\\_refs'`);
  expect(left).toEqual([]);
  for (const table of REFERENCING) {
    expect(await count(table, old)).toBe(0);
    expect(await count(table, recent)).toBe(1);
    expect(await orphans(table)).toBe(0);
  }
});

it('drops at its next run a partition left detached by a drop whose second transaction did not run', async () => {
  await rawQuery(db(), `CREATE TABLE messages_p20200101 (LIKE messages)`);
  await rawQuery(db(), `CREATE TABLE messages_p2020 (LIKE messages)`);
  await dropOldPartitions(db(), 'messages', new Date(Date.now() - 400 * DAY));
  const left = await rawQuery<{ relname: string }>(db(), `SELECT relname FROM pg_class WHERE relname IN ('messages_p20200101', 'messages_p2020')`);
  // only a name a partition of ours takes is dropped
  expect(left.map((r) => r.relname)).toEqual(['messages_p2020']);
});
