/**
 * The upgrade to time partitions both ways on the same rows (docs/partitions.md, "Upgrading an existing
 * installation"): a database at the schema before 20261129190000_time_partitions filled with ROWS emails over four
 * months (two attempts, an event and a click each, an open for one in two) and ROWS / 2 MX messages and inbound emails
 * each (an attachment of 1 KB for one inbound email in five), copied (CREATE DATABASE ... TEMPLATE); one copy migrated
 * offline to the last migration, the other prepared online (BATCH rows a transaction) and then migrated (the swaps).
 * The migration's time is the service's downtime either way. Run:
 *   ROWS=300000 npx tsx bench/online-upgrade.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS_DIR, migrate } from '../apps/core/src/migrate';
import { prepare, progressLine } from '../apps/core/src/upgrade/prepare';

const ROWS = Number(process.env.ROWS ?? 300_000);
const BATCH = Number(process.env.BATCH ?? 10_000);
const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const NAME = `ms_bench_online_upgrade_${process.pid}`;
const url = (name: string) => `${SERVER}/${name}`;

async function sql<T>(name: string, work: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: url(name) });
  await pg.connect();
  try {
    return await work(pg);
  } finally {
    await pg.end();
  }
}

/** The migrations up to and including `last`, in a folder of their own. */
function migrationsUpTo(last: string, before = false): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-bench-upgrade-'));
  for (const name of fs.readdirSync(MIGRATIONS_DIR)) {
    if (before ? name < last : name <= last) fs.cpSync(path.join(MIGRATIONS_DIR, name), path.join(dir, name), { recursive: true });
  }
  return dir;
}

async function fill(name: string): Promise<void> {
  await sql(name, async (pg) => {
    await pg.query(`INSERT INTO accounts (name) VALUES ('bench')`);
    await pg.query(`INSERT INTO mailboxes (account_id, address, smtp_host, smtp_port) VALUES (1, 'bench@example.com', '127.0.0.1', 25)`);
    await pg.query('SET synchronous_commit = off');
    for (let start = 0; start < ROWS; start += 100_000) {
      await pg.query(
        `WITH made AS (
           SELECT n, now() - (n::float8 / $1) * interval '90 days' AS at, md5(n::text) AS h FROM generate_series($2::int, $3::int) n
         ), ids AS (
           SELECT n, at, (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid AS id FROM made
         ), m AS (
           INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, smtp_response, sent_at, created_at, updated_at)
           SELECT id, 1, 1, 'transactional', 'r' || n || '@d' || (n % 5000) || '.example', 'Hello ' || n, '<' || id || '@example.com>', 'sent', 2, '250 OK', at, at, at FROM ids
         ), a AS (
           INSERT INTO message_attempts (message_id, attempt, at, outcome, response) SELECT id, k, at, 'sent', '250 OK' FROM ids, generate_series(1, 2) k
         ), e AS (
           INSERT INTO events (account_id, type, data, created_at) SELECT 1, 'message.sent', jsonb_build_object('id', id), at FROM ids
         ), c AS (
           INSERT INTO link_clicks (message_id, account_id, url, at) SELECT id, 1, 'https://shop.example/' || (n % 50), at FROM ids
         )
         INSERT INTO message_opens (message_id, account_id, first_at, last_at) SELECT id, 1, at, at FROM ids WHERE n % 2 = 0`,
        [ROWS, start, Math.min(ROWS, start + 100_000) - 1],
      );
    }
    await pg.query(
      `INSERT INTO mx_messages (id, account_id, domain, status, mail_from, rcpt_to, client_address, helo, auth, raw, size, received_at)
       SELECT id, 1, 'in.example', (CASE WHEN n % 10 = 0 THEN 'held' ELSE 'delivered' END)::"MxMessageStatus", 's' || n || '@example.org',
              ARRAY['in@in.example'], '192.0.2.1', 'mx.example.org', '{}', convert_to(repeat('x', 2000), 'UTF8'), 2000, created_at
         FROM (SELECT id, created_at, row_number() OVER () AS n FROM messages) m WHERE n % 2 = 0`,
    );
    await pg.query(
      `INSERT INTO inbound_messages (mailbox_id, uid_validity, uid, kind, from_address, subject, received_at)
       SELECT 1, 1, n, 'reply', 'r' || n || '@example.org', 'Re: Hello ' || n, now() - (n::float8 / $1) * interval '90 days' FROM generate_series(1, $1::int / 2) n`,
      [ROWS],
    );
    await pg.query(`INSERT INTO inbound_attachments (id, inbound_message_id, position, size, content)
                    SELECT gen_random_uuid(), id, 1, 1024, convert_to(repeat('a', 1024), 'UTF8') FROM inbound_messages WHERE id % 5 = 0`);
    await pg.query('VACUUM ANALYZE');
  });
}

async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = process.hrtime.bigint();
  const result = await work();
  console.log(`${what}: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(2)} s`);
  return result;
}

async function main(): Promise<void> {
  const previous = migrationsUpTo('20261129190000_time_partitions', true);
  try {
    await migrate(url(NAME), previous);
    await timed(`fill ${ROWS.toLocaleString('en-US')} emails`, () => fill(NAME));
    await sql('postgres', (pg) => pg.query(`CREATE DATABASE ${NAME}_offline TEMPLATE ${NAME}`));
    await timed('offline: migrate (the copies in the migrations, the service stopped)', () => migrate(url(`${NAME}_offline`)));
    await timed(`online: partitions:prepare, BATCH ${BATCH} (the service running)`, () =>
      prepare(url(NAME), { batch: BATCH, logEvery: Number.MAX_SAFE_INTEGER, onProgress: (p) => p.done && console.log(`  ${progressLine(p)}`) }));
    await timed('online: migrate (the swaps, the service stopped)', () => migrate(url(NAME)));
  } finally {
    fs.rmSync(previous, { recursive: true, force: true });
    await sql('postgres', async (pg) => {
      for (const name of [NAME, `${NAME}_offline`]) await pg.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
