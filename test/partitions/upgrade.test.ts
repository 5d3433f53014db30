import { Client } from 'pg';
import { createDb, rawQuery, type Db } from '../../apps/core/src/db';
import { newId } from '../../apps/core/src/ids';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { migrate } from '../../apps/core/src/migrate';
import { createCampaign } from '../../apps/core/src/outreach/campaigns';
import { createList } from '../../apps/core/src/subscribers/lists';
import { usePreviousSchema } from '../helpers/previous-schema';

/**
 * Upgrading an installation filled by the previous schema (docs/partitions.md, "Upgrading an existing installation"): the migration rebuilds
 * messages, message_attempts and events as partitioned tables, with every row, key and reference, while sends keep
 * arriving (they wait for the migration's locks, then land in the new tables): none lost, none twice.
 */
const MIGRATION = '20261129190000_time_partitions';
const previous = usePreviousSchema(MIGRATION, 'upgrade');
let url: string;
let old: Db;

beforeAll(() => {
  url = previous.url;
  old = createDb(url, 4);
});

afterAll(async () => {
  await old.$disconnect();
});

const one = async <T>(text: string, values: unknown[] = []) => (await rawQuery<T>(old, text, values))[0]!;

it('moves every row to partitions, keeps the keys and references, and loses or repeats no send made during the upgrade', async () => {
  // the account's row by SQL: the client knows columns later migrations add (require_second_factor)
  const account = await one<{ id: number }>(`INSERT INTO accounts (name) VALUES ('upgraded') RETURNING id`);
  const mailbox = await createMailbox(old, { account: account.id, address: 'sender@example.com', name: 'Sender', smtp: 'smtp://127.0.0.1:2525' });
  const campaign = await createCampaign(old, { account: account.id, mailbox: mailbox.id, name: 'c', goal: 'links', steps: [{ subject: 'Hello', body: 'Hi', delay_hours: 0 }] });
  const list = await createList(old, { account: account.id, mailbox: mailbox.id, name: 'l', confirm: false });
  const prospect = await one<{ id: number }>(`INSERT INTO prospects (campaign_id, email) VALUES ($1, 'p@example.org') RETURNING id`, [campaign.id]);
  const subscriber = await one<{ id: number }>(`INSERT INTO subscribers (list_id, email, status) VALUES ($1, 'reader@example.org', 'active') RETURNING id`, [list.id]);
  const broadcast = await one<{ id: number }>(`INSERT INTO broadcasts (account_id, list_id, subject, text, status, updated_at) VALUES ($1, $2, 'S', 'T', 'sending', now()) RETURNING id`, [account.id, list.id]);

  const insert = (db: Db | Client, id: string, extra = '', values: unknown[] = []) =>
    (db instanceof Client ? db.query.bind(db) : (text: string, v: unknown[]) => rawQuery(db, text, v))(
      `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header${extra ? ', ' + extra : ''}) VALUES ($1::uuid, $2, $3, 'transactional', 'a@example.org', 'S', '<' || $1::text || '@x>'${values.map((_, i) => `, $${i + 4}`).join('')})`,
      [id, account.id, mailbox.id, ...values],
    );
  // an id made before ids carried their time (version 4), one of this month, a prospect's step and a broadcast's copy
  const random = '3f1c2a4e-9b7d-4c1e-8f2a-6d5b4c3a2e1f';
  const timed = newId();
  const step = newId();
  const copy = newId();
  await insert(old, random);
  await insert(old, timed);
  await insert(old, step, 'prospect_id, step', [prospect.id, 1]);
  await insert(old, copy, 'broadcast_id, subscriber_id', [broadcast.id, subscriber.id]);
  await rawQuery(old, `INSERT INTO message_attempts (message_id, attempt, outcome, response) VALUES ($1, 1, 'deferred', '451 later'), ($2, 1, 'deferred', '451 later')`, [random, timed]);
  await rawQuery(old, `INSERT INTO link_clicks (message_id, account_id, url) VALUES ($1, $2, 'https://shop.example/')`, [timed, account.id]);
  const event = await one<{ id: string }>(`INSERT INTO events (account_id, type, data) VALUES ($1, 'message.sent', '{}') RETURNING id::text`, [account.id]);
  const webhook = await one<{ id: number }>(`INSERT INTO webhooks (account_id, url, secret_enc) VALUES ($1, 'https://hooks.example.com/', 'x') RETURNING id`, [account.id]);
  await rawQuery(old, 'INSERT INTO webhook_jobs (event_id, webhook_id) VALUES ($1, $2)', [event.id, webhook.id]);

  // sends keep arriving on their own connection while the migration runs: each acknowledged one is recorded
  const sender = new Client({ connectionString: url });
  await sender.connect();
  const acknowledged: string[] = [];
  let sending = true;
  const flow = (async () => {
    while (sending) {
      const id = newId();
      await insert(sender, id);
      acknowledged.push(id);
    }
  })();
  while (acknowledged.length < 20) await new Promise((r) => setTimeout(r, 10));
  const { applied } = await migrate(url);
  expect(applied[0]).toBe(MIGRATION);
  const during = acknowledged.length;
  while (acknowledged.length < during + 20) await new Promise((r) => setTimeout(r, 10));
  sending = false;
  await flow;
  await sender.end();

  // every table is partitioned now, and the old rows are where their ids say
  for (const table of ['messages', 'message_attempts', 'events', 'link_clicks']) expect((await one<{ relkind: string }>('SELECT relkind::text FROM pg_class WHERE relname = $1', [table])).relkind).toBe('p');
  const partitionOf = async (table: string, column: string, id: string) => (await one<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM ${table} WHERE ${column} = $1::uuid`, [id])).part;
  expect(await partitionOf('messages', 'id', random)).toBe('messages_default');
  expect(await partitionOf('messages', 'id', timed)).toMatch(/^messages_p\d{8}$/);
  expect(await partitionOf('message_attempts', 'message_id', timed)).toMatch(/^message_attempts_p\d{8}$/);
  expect(await partitionOf('events', 'id', event.id)).toBe('events_default');
  expect(await partitionOf('link_clicks', 'message_id', timed)).toMatch(/^link_clicks_p\d{8}$/);
  // the keys moved to their tables, and still refuse a second message
  expect(await one('SELECT message_id::text AS id FROM message_steps WHERE prospect_id = $1 AND step = 1', [prospect.id])).toEqual({ id: step });
  expect(await one('SELECT message_id::text AS id FROM broadcast_copies WHERE broadcast_id = $1 AND subscriber_id = $2', [broadcast.id, subscriber.id])).toEqual({ id: copy });
  await expect(insert(old, newId(), 'prospect_id, step', [prospect.id, 1])).rejects.toMatchObject({ code: '23505' });
  // references still hold, and still cascade
  expect(await one('SELECT count(*)::int AS n FROM webhook_jobs WHERE event_id = $1', [event.id])).toEqual({ n: 1 });
  await rawQuery(old, 'DELETE FROM messages WHERE id = $1', [timed]);
  expect(await one('SELECT (SELECT count(*) FROM link_clicks WHERE message_id = $1)::int + (SELECT count(*) FROM message_attempts WHERE message_id = $1)::int AS n', [timed])).toEqual({ n: 0 });

  // every send acknowledged before, during and after the migration is there once
  const found = await rawQuery<{ id: string; n: number }>(old, 'SELECT id::text, count(*) OVER (PARTITION BY id)::int AS n FROM messages WHERE id = ANY($1::uuid[])', [acknowledged]);
  expect(found.length).toBe(acknowledged.length);
  expect(found.every((r) => r.n === 1)).toBe(true);
  expect(await one('SELECT count(*)::int AS n FROM messages')).toEqual({ n: acknowledged.length + 3 });
});
