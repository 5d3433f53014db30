import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createDb, type Db } from '../../apps/core/src/db';
import { newId } from '../../apps/core/src/ids';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { MIGRATIONS_DIR, migrate } from '../../apps/core/src/migrate';
import { createCampaign } from '../../apps/core/src/outreach/campaigns';
import { createList } from '../../apps/core/src/subscribers/lists';
import { abandon, prepare, progressLine, type Progress } from '../../apps/core/src/upgrade/prepare';
import { catalogLines } from '../helpers/catalog';
import { usePreviousSchema } from '../helpers/previous-schema';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * The online upgrade to time partitions (docs/partitions.md, "Upgrading an existing installation"): prepared while
 * the previous schema serves writes (a run killed midway, then resumed), then swapped in by the migration. Every row
 * is there once with its last values, and the schema is the one the offline copy makes.
 */
const MIGRATION = '20261129190000_time_partitions';
const TRACKING = '20261130060000_partitions_tracking_mx';
const MX_DELIVERED_AT = '20261130040000_mx_delivered_at';
const online = usePreviousSchema(MIGRATION, 'online');
const offline = usePreviousSchema(MIGRATION, 'offline');
const unfinished = usePreviousSchema(MIGRATION, 'unfinished');
const KEYS = { messages: 'id', message_attempts: 'message_id, attempt', events: 'id', link_clicks: 'id', message_opens: 'message_id', mx_messages: 'id', inbound_messages: 'id', inbound_attachments: 'id' } as const;
const PREPARED = Object.keys(KEYS).length;

/** An MX message as the previous version writes it (held until its route takes it). */
const MX_ROW = `INSERT INTO mx_messages (id, account_id, domain, status, mail_from, rcpt_to, client_address, helo, auth, raw, size)
  SELECT m.id, $2, 'in.example', (CASE WHEN m.n % 3 = 0 THEN 'held' ELSE 'delivered' END)::"MxMessageStatus", 'a@example.org',
         ARRAY['b@in.example'], '192.0.2.1', 'mx.example.org', '{}', convert_to('Subject: ' || m.n, 'UTF8'), 12
    FROM unnest($1::uuid[]) WITH ORDINALITY m(id, n)`;

/** Inbound emails read over IMAP as the previous version writes them, at the uids given (serial ids). */
const INBOUND_ROW = `INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind, from_address, subject)
  SELECT $1, 7, u, (CASE WHEN u % 4 = 0 THEN 'bounce' ELSE 'reply' END)::"InboundKind", 'them@example.org', 'Re: ' || u FROM unnest($2::bigint[]) u`;

const connect = async (url: string) => {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

/** An installation's rows: messages (a few with ids of before ids carried their time), their attempts, clicks, events; MX messages, inbound emails and attachments. */
async function fill(url: string, messages: number): Promise<{ account: number; mailbox: number }> {
  const db: Db = createDb(url, 2);
  const sql = await connect(url);
  try {
    const account = (await sql.query<{ id: number }>(`INSERT INTO accounts (name) VALUES ('upgraded') RETURNING id`)).rows[0]!.id;
    const mailbox = await createMailbox(db, { account, address: 'sender@example.com', name: 'Sender', smtp: 'smtp://127.0.0.1:20025' });
    const campaign = await createCampaign(db, { account, mailbox: mailbox.id, name: 'c', goal: 'links', steps: [{ subject: 'Hello', body: 'Hi', delay_hours: 0 }] });
    const list = await createList(db, { account, mailbox: mailbox.id, name: 'l', confirm: false });
    const prospects = (await sql.query<{ id: number }>(`INSERT INTO prospects (campaign_id, email) SELECT $1, 'p' || g || '@example.org' FROM generate_series(1, 50) g RETURNING id`, [campaign.id])).rows.map((r) => r.id);
    const subscribers = (await sql.query<{ id: number }>(`INSERT INTO subscribers (list_id, email, status) SELECT $1, 'r' || g || '@example.org', 'active' FROM generate_series(1, 50) g RETURNING id`, [list.id])).rows.map((r) => r.id);
    const broadcast = (await sql.query<{ id: number }>(`INSERT INTO broadcasts (account_id, list_id, subject, text, status, updated_at) VALUES ($1, $2, 'S', 'T', 'sending', now()) RETURNING id`, [account, list.id])).rows[0]!.id;
    const ids = Array.from({ length: messages }, (_, i) => (i % 20 === 0 ? crypto.randomUUID() : newId()));
    await sql.query(
      `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, prospect_id, step, broadcast_id, subscriber_id)
       SELECT m.id, $2, $3, 'transactional', 'a' || m.n || '@example.org', 'S ' || m.n, '<' || m.id || '@x>',
              ($4::int[])[m.n], CASE WHEN m.n <= 50 THEN 1 END, CASE WHEN m.n > 50 AND m.n <= 100 THEN $6::int END, ($5::int[])[m.n - 50]
         FROM unnest($1::uuid[]) WITH ORDINALITY m(id, n)`,
      [ids, account, mailbox.id, prospects, subscribers, broadcast],
    );
    await sql.query(`INSERT INTO message_attempts (message_id, attempt, outcome, response) SELECT id, a, 'deferred', '451 later' FROM messages, generate_series(1, 2) a`);
    await sql.query(`INSERT INTO link_clicks (message_id, account_id, url, scanner) SELECT id, account_id, 'https://shop.example/' || (n % 3), n % 2 = 0 FROM messages, generate_series(1, 3) n`);
    await sql.query(`INSERT INTO message_opens (message_id, account_id) SELECT id, account_id FROM messages WHERE random() < 0.5`);
    await sql.query(`INSERT INTO events (account_id, type, data) SELECT $1, 'message.sent', jsonb_build_object('id', id) FROM messages`, [account]);
    const webhook = (await sql.query<{ id: number }>(`INSERT INTO webhooks (account_id, url, secret_enc) VALUES ($1, 'https://hooks.example.com/', 'x') RETURNING id`, [account])).rows[0]!.id;
    await sql.query('INSERT INTO webhook_jobs (event_id, webhook_id) SELECT id, $1 FROM events LIMIT 20', [webhook]);
    await sql.query(MX_ROW, [ids.slice(0, Math.ceil(messages / 2)).map((id) => (id.charAt(14) === '7' ? newId() : id)), account]);
    await sql.query(INBOUND_ROW, [mailbox.id, Array.from({ length: Math.ceil(messages / 2) }, (_, i) => i + 1)]);
    await sql.query(`INSERT INTO inbound_attachments (id, inbound_message_id, position, filename, size, content)
                     SELECT gen_random_uuid(), id, 1, 'a.txt', 2, '\\x6869' FROM inbound_messages WHERE id % 5 = 0`);
    return { account, mailbox: mailbox.id };
  } finally {
    await sql.end();
    await db.$disconnect();
  }
}

/**
 * Sends through the old schema as the previous version makes them: new messages with their attempt and event, status
 * changes, deletions; with them MX messages (released from held) and inbound emails (an attachment each) come and go.
 */
function writers(url: string, account: number, mailbox: number, count = 3) {
  let running = true;
  const inserted: string[] = [];
  const deleted = new Set<string>();
  let updates = 0;
  const loops = Array.from({ length: count }, async (_, w) => {
    const sql = await connect(url);
    // every other one just past where the copy of messages stands (a race with its batch), the others anywhere
    const edge = `SELECT id::text FROM messages WHERE id > (SELECT last_key[1]::uuid FROM partitions_online WHERE table_name = 'messages' AND state = 'copying')
                  ORDER BY id LIMIT 1 OFFSET floor(random() * 15)::int`;
    const pick = async (i: number) => (i % 2 && (await sql.query<{ id: string }>(edge).catch(() => ({ rows: [] }))).rows[0]?.id)
      || (await sql.query<{ id: string }>('SELECT id::text FROM messages TABLESAMPLE SYSTEM (5) LIMIT 1')).rows[0]?.id;
    const step = async (i: number) => {
      const op = (i + w) % 4;
      if (op === 0) {
        const id = newId();
        await sql.query('BEGIN');
        await sql.query(`INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header) VALUES ($1::uuid, $2, $3, 'transactional', 'new@example.org', 'N', '<' || $1::text || '@x>')`, [id, account, mailbox]);
        await sql.query(`INSERT INTO message_attempts (message_id, attempt, outcome, response) VALUES ($1, 1, 'sending', '')`, [id]);
        await sql.query(`INSERT INTO events (account_id, type, data) VALUES ($1, 'message.queued', jsonb_build_object('id', $2::text))`, [account, id]);
        await sql.query(`INSERT INTO link_clicks (message_id, account_id, url) VALUES ($1, $2, 'https://new.example/')`, [id, account]);
        await sql.query(MX_ROW, [[newId()], account]);
        const inbound = (await sql.query<{ id: number }>(`${INBOUND_ROW} RETURNING id`, [mailbox, [10_000_000 + w * 1_000_000 + i]])).rows[0]!.id;
        await sql.query(`INSERT INTO inbound_attachments (id, inbound_message_id, position, size) VALUES (gen_random_uuid(), $1, 1, 0)`, [inbound]);
        await sql.query('COMMIT');
        inserted.push(id);
      } else if (op === 3 && i % 3 === 0) {
        const id = await pick(i);
        if (id) {
          await sql.query('DELETE FROM messages WHERE id = $1', [id]);
          await sql.query('DELETE FROM mx_messages WHERE id = (SELECT id FROM mx_messages TABLESAMPLE SYSTEM (5) LIMIT 1)');
          await sql.query('DELETE FROM inbound_messages WHERE id = (SELECT id FROM inbound_messages ORDER BY random() LIMIT 1)');
          deleted.add(id);
        }
      } else {
        const id = await pick(i);
        if (!id) return;
        await sql.query('BEGIN');
        await sql.query(`UPDATE messages SET status = 'sent', attempts = attempts + 1, smtp_response = '250 ' || $2, sent_at = now(), updated_at = now() WHERE id = $1`, [id, String(i)]);
        await sql.query(`UPDATE message_attempts SET outcome = 'sent', response = '250 ok ' || $2 WHERE message_id = $1`, [id, String(i)]);
        await sql.query(`UPDATE events SET dispatched_at = now() WHERE data->>'id' = $1 AND type LIKE 'message.%'`, [id]);
        await sql.query(`UPDATE link_clicks SET count = count + 1, at = now() WHERE message_id = $1`, [id]);
        await sql.query(`INSERT INTO message_opens (message_id, account_id) VALUES ($1, $2)
                         ON CONFLICT (message_id) DO UPDATE SET count = message_opens.count + 1, last_at = now()`, [id, account]);
        // a held MX message released: delivered, which 20261130040000 gives a delivered_at
        await sql.query(`UPDATE mx_messages SET status = 'delivered' WHERE id = (SELECT id FROM mx_messages WHERE status = 'held' LIMIT 1 FOR UPDATE SKIP LOCKED)`);
        // an inbound email's row changed, now and then its uid too (its claim in inbound_uids follows)
        await sql.query(`UPDATE inbound_messages SET detail = 'seen ' || $1, uid = uid + CASE WHEN $1::int % 5 = 0 THEN 100000000 ELSE 0 END
                          WHERE id = (SELECT id FROM inbound_messages ORDER BY random() LIMIT 1)`, [i]);
        await sql.query('COMMIT');
        updates++;
      }
    };
    for (let i = 0; running; i++) {
      // a message another writer deleted meanwhile (23503), two writers on one message (40P01): as a send would, give up this one
      await step(i).catch(async (err: { code?: string }) => {
        await sql.query('ROLLBACK');
        if (err.code !== '23503' && err.code !== '40P01') throw err;
      });
    }
    await sql.end();
  });
  return {
    inserted,
    deleted,
    updates: () => updates,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The rows of the upgraded tables, each as the text of its previous schema's columns (later migrations add some). */
async function rowsOf(url: string, columns: Record<string, string>): Promise<Record<string, string[]>> {
  const sql = await connect(url);
  try {
    const rows: Record<string, string[]> = {};
    for (const [table, key] of Object.entries(KEYS)) {
      columns[table] ??= (await sql.query<{ list: string }>(`SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS list FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, [table])).rows[0]!.list;
      rows[table] = (await sql.query<{ r: string }>(`SELECT row(${columns[table]})::text AS r FROM ${table} ORDER BY ${key}`)).rows.map((r) => r.r);
    }
    rows.message_steps = (await sql.query<{ r: string }>(`SELECT prospect_id || ':' || step || ':' || id AS r FROM messages WHERE prospect_id IS NOT NULL AND step IS NOT NULL ORDER BY 1`)).rows.map((r) => r.r);
    rows.inbound_uids = (await sql.query<{ r: string }>(`SELECT concat_ws(':', mailbox_id, uid_validity, uid, id) AS r FROM inbound_messages ORDER BY 1`)).rows.map((r) => r.r);
    return rows;
  } finally {
    await sql.end();
  }
}

const progressRows = async (url: string) => {
  const sql = await connect(url);
  try {
    return (await sql.query<{ table_name: string; state: string; total: string; copied: string; started_at: Date }>('SELECT table_name, state, total, copied, started_at FROM partitions_online ORDER BY position')).rows;
  } finally {
    await sql.end();
  }
};

it('copies every row once with its last values while sends write, resumes after a kill, and the migration swaps the copies in', async () => {
  const url = online.url;
  const { account, mailbox } = await fill(url, 3000);
  const sends = writers(url, account, mailbox);

  // a preparation killed midway: its batches so far are kept
  const killed = runTs('scripts/partitions-prepare.ts', ['--batch', '10'], { DATABASE_URL: url, DIRECT_DATABASE_URL: url });
  await waitFor(async () => Number((await progressRows(url).catch(() => []))[0]?.copied ?? 0) >= 300, { timeout: 60_000, interval: 5, what: 'a third of the copy' });
  killed.child.kill('SIGKILL');
  await killed.exited;
  const atKill = await progressRows(url);
  expect(atKill[0]).toMatchObject({ table_name: 'messages', state: 'copying' });
  expect(Number(atKill[0]!.copied)).toBeLessThan(Number(atKill[0]!.total));

  // resumed where it stopped (the first batch of this run counts on from there), with writes still flowing
  const seen: Progress[] = [];
  const done = await prepare(url, { batch: 10, onProgress: (p) => seen.push(p) });
  expect(seen[0]!.copied).toBeGreaterThan(Number(atKill[0]!.copied));
  expect(done.map((p) => p.done)).toEqual(Array(PREPARED).fill(true));
  const finished = await progressRows(url);
  expect(finished.map((p) => p.state)).toEqual(Array(PREPARED).fill('copied'));
  for (const p of finished) expect(Number(p.copied)).toBe(Number(p.total));
  expect(finished[0]!.started_at).toEqual(atKill[0]!.started_at);
  expect(progressLine(done[0]!)).toMatch(/^messages: [\d,]+ of [\d,]+ rows \(100%\), [\d,]+ rows\/s, done$/);

  // the mirror alone, after the copy, then the service stops
  const before = sends.inserted.length;
  await waitFor(() => sends.inserted.length > before + 30, { timeout: 30_000, what: 'sends after the copy' });
  await sends.stop();
  expect(sends.deleted.size).toBeGreaterThan(5);
  expect(sends.updates()).toBeGreaterThan(20);
  const columns: Record<string, string> = {};
  const last = await rowsOf(url, columns);
  // as a preparation made a month before leaves inbound_messages' copy: a month ended since, the last month ahead not made
  const months = await connect(url);
  try {
    await months.query('CREATE TABLE inbound_messages_p20000101 PARTITION OF inbound_messages_online FOR VALUES FROM (946684800000000) TO (949363200000000)');
    const ahead = (await months.query<{ name: string }>(`SELECT max(relname) AS name FROM pg_class WHERE relname ~ '^inbound_messages_p\\d{8}$'`)).rows[0]!.name;
    await months.query(`DROP TABLE ${ahead}`);
  } finally {
    await months.end();
  }

  // up to mx_messages' delivered_at (made on its copy already: the preparation stays until its swap), then up to the
  // tracking tables' partitions, then the rest
  const migrateUpTo = async (last: string) => {
    const upTo = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-online-upgrade-'));
    for (const dir of fs.readdirSync(MIGRATIONS_DIR)) if (dir <= last) fs.cpSync(path.join(MIGRATIONS_DIR, dir), path.join(upTo, dir), { recursive: true });
    const { applied } = await migrate(url, upTo);
    fs.rmSync(upTo, { recursive: true, force: true });
    return applied;
  };
  expect((await migrateUpTo(MX_DELIVERED_AT)).at(-1)).toBe(MX_DELIVERED_AT);
  await expect(abandon(url)).rejects.toThrow(`${MX_DELIVERED_AT} was applied over the prepared mx_messages`);
  const applied = await migrateUpTo(TRACKING);
  expect(applied.at(-1)).toBe(TRACKING);
  const sql = await connect(url);
  try {
    for (const name of [MIGRATION, MX_DELIVERED_AT, TRACKING]) {
      const checksum = crypto.createHash('sha256').update(fs.readFileSync(path.join(MIGRATIONS_DIR, name, 'migration.sql'))).digest('hex');
      expect((await sql.query('SELECT checksum FROM "_prisma_migrations" WHERE migration_name = $1', [name])).rows).toEqual([{ checksum }]);
    }
    for (const table of Object.keys(KEYS)) {
      expect((await sql.query('SELECT relkind::text FROM pg_class WHERE relname = $1', [table])).rows).toEqual([{ relkind: table.startsWith('inbound_') ? 'r' : 'p' }]);
    }
    // the copies have the old names, their triggers and functions are gone; inbound_messages' wait for 20261202050100
    expect((await sql.query(`SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE '%\\_online%' AND relname NOT LIKE 'inbound\\_%' AND relname NOT LIKE 'partitions\\_online%')::int AS relations,
                                    (SELECT count(*) FROM pg_proc WHERE proname LIKE '%\\_online\\_mirror')::int AS functions`)).rows).toEqual([{ relations: 0, functions: 2 }]);

    // every row the old tables ended with, once, with its last values, where its id says; none of the deleted
    const now = await rowsOf(url, columns);
    for (const table of Object.keys(last)) {
      const [had, has] = [new Set(last[table]), new Set(now[table])];
      expect({ table, lost: last[table]!.filter((r) => !has.has(r)), extra: now[table]!.filter((r) => !had.has(r)) }).toEqual({ table, lost: [], extra: [] });
    }
    expect(now).toEqual(last);
    const kept = sends.inserted.filter((id) => !sends.deleted.has(id));
    expect((await sql.query('SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::uuid[])', [kept])).rows).toEqual([{ n: kept.length }]);
    expect((await sql.query('SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::uuid[])', [[...sends.deleted]])).rows).toEqual([{ n: 0 }]);
    expect((await sql.query(`SELECT count(*)::int AS n FROM messages_default WHERE substr(id::text, 15, 1) = '7'`)).rows).toEqual([{ n: 0 }]);
    // 20261130040000's rule on every MX message's last values: delivered_at is received_at for the delivered ones
    const mx = (await sql.query<{ wrong: number; delivered: number }>(`SELECT count(*) FILTER (WHERE delivered_at IS DISTINCT FROM CASE WHEN status = 'delivered' THEN received_at END)::int AS wrong,
                                    count(*) FILTER (WHERE delivered_at IS NOT NULL)::int AS delivered FROM mx_messages`)).rows[0]!;
    expect(mx.wrong).toBe(0);
    expect(mx.delivered).toBeGreaterThan(500);
    expect((await sql.query('SELECT prospect_id || \':\' || step || \':\' || message_id AS r FROM message_steps ORDER BY 1')).rows.map((r) => r.r)).toEqual(last.message_steps);
    // the keys and references hold as the offline copy leaves them
    const claimed = (await sql.query<{ prospect_id: number }>('SELECT prospect_id FROM message_steps LIMIT 1')).rows[0]!.prospect_id;
    await expect(sql.query(`INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, prospect_id, step) VALUES ($1, $2, $3, 'transactional', 'a@example.org', 'S', '<dup@x>', $4, 1)`, [newId(), account, mailbox, claimed]))
      .rejects.toMatchObject({ code: '23505' });
  } finally {
    await sql.end();
  }
  // the rest, inbound_messages' swap among them: its rows and attachments as they were, their uid claims in inbound_uids
  await migrate(url);
  expect(await rowsOf(url, columns)).toEqual(last);
  const after = await connect(url);
  try {
    expect((await after.query<{ r: string }>(`SELECT concat_ws(':', mailbox_id, uid_validity, uid, inbound_message_id) AS r FROM inbound_uids ORDER BY 1`)).rows.map((r) => r.r))
      .toEqual(last.inbound_uids);
    expect((await after.query(`SELECT relkind::text FROM pg_class WHERE relname = 'inbound_messages'`)).rows).toEqual([{ relkind: 'p' }]);
    expect((await after.query('SELECT count(*)::int AS n FROM inbound_messages_default')).rows).toEqual([{ n: last.inbound_messages!.length }]);
    expect((await after.query(`SELECT relname FROM pg_class WHERE relname LIKE '%\\_online%' OR relname = 'partitions_online'`)).rows).toEqual([]);
    // a new email gets inbound_id()'s id, in this month's partition, and its uid is claimed once
    const made = (await after.query<{ id: string; part: string }>(`INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind) VALUES ($1, 8, 1, 'reply') RETURNING id, tableoid::regclass::text AS part`, [mailbox])).rows[0]!;
    expect(made.part).toMatch(/^inbound_messages_p\d{8}$/);
    await after.query('INSERT INTO inbound_uids (mailbox_id, uid_validity, uid, inbound_message_id) VALUES ($1, 8, 1, $2)', [mailbox, made.id]);
    await expect(after.query('INSERT INTO inbound_uids (mailbox_id, uid_validity, uid, inbound_message_id) VALUES ($1, 8, 1, $2)', [mailbox, made.id])).rejects.toMatchObject({ code: '23505' });
    await after.query('DELETE FROM inbound_messages WHERE id = $1', [made.id]);
  } finally {
    await after.end();
  }

  // the offline copy of an installation of the same schema: the same catalog, line for line
  await fill(offline.url, 100);
  await migrate(offline.url);
  const [a, b] = [await catalogLines(url), await catalogLines(offline.url)];
  expect(a.partitions).toContain('messages messages_default DEFAULT');
  for (const part of Object.keys(a)) expect({ part, lines: a[part] }).toEqual({ part, lines: b[part] });
}, 300_000);

it('refuses to prepare a database whose tables are partitioned already', async () => {
  await expect(prepare(online.url)).rejects.toThrow(`${MIGRATION} is applied already`);
});

it('refuses to migrate over an unfinished preparation, recording nothing, and copies offline once it is abandoned', async () => {
  const url = unfinished.url;
  await fill(url, 40);
  await prepare(url, { batch: 10 });
  const sql = await connect(url);
  try {
    // as a run stopped before its end leaves it
    await sql.query(`UPDATE partitions_online SET state = 'copying' WHERE table_name = 'events'`);
    await expect(migrate(url)).rejects.toThrow('the online preparation of the time partitions is not finished');
    expect((await sql.query('SELECT count(*)::int AS n FROM "_prisma_migrations" WHERE migration_name >= $1', [MIGRATION])).rows).toEqual([{ n: 0 }]);

    const leftovers = `SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE '%\\_online%' OR relname ~ '_(p\\d{8}|default)$')::int AS tables,
                              (SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%_online_mirror')::int AS triggers`;
    expect((await sql.query(leftovers)).rows).toEqual([{ tables: expect.any(Number), triggers: PREPARED }]);
    await abandon(url);
    expect((await sql.query(leftovers)).rows).toEqual([{ tables: 0, triggers: 0 }]);
    const { applied } = await migrate(url);
    expect(applied[0]).toBe(MIGRATION);
    expect((await sql.query('SELECT count(*)::int AS n FROM messages')).rows).toEqual([{ n: 40 }]);
  } finally {
    await sql.end();
  }
}, 120_000);
