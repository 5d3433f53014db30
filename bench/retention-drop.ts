/**
 * A month's retention of emails as a DROP of its partition against the batched DELETE it replaces (docs/partitions.md),
 * on the same generated data: ROWS_PER_MONTH finished emails in each of two past months, one in ten with a failed
 * attempt, in a database of its own; copied (CREATE DATABASE ... TEMPLATE) so each way starts from the same rows.
 * Times the older month's retention (MESSAGE_ROWS_DAYS) both ways. Run:
 *   ROWS_PER_MONTH=1000000 npx tsx bench/retention-drop.ts
 */
import { Client } from 'pg';
import { createDb } from '../apps/core/src/db';
import { idFloor } from '../apps/core/src/ids';
import { migrate } from '../apps/core/src/migrate';
import { dropOldPartitions, intervalStart, nextIntervalStart, partitionName } from '../apps/core/src/partitions';
import { dropPartition, listPartitions, partitionStillNeeded, referencesTo } from '../apps/core/src/partitions/repository';
import { BATCH, OLD_MESSAGES, deleteOldBatch } from '../apps/core/src/retention/repository';

const ROWS = Number(process.env.ROWS_PER_MONTH ?? 1_000_000);
const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const NAME = `ms_bench_retention_${process.pid}`;

async function admin<T>(work: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: `${SERVER}/postgres` });
  await pg.connect();
  try {
    return await work(pg);
  } finally {
    await pg.end();
  }
}

async function fill(url: string, months: number[]): Promise<void> {
  const pg = new Client({ connectionString: url });
  await pg.connect();
  try {
    await pg.query(`INSERT INTO accounts (name) VALUES ('bench') `);
    for (const table of ['messages', 'message_attempts', 'events']) {
      for (const from of months) {
        await pg.query(`CREATE TABLE IF NOT EXISTS ${partitionName(table as 'messages', from)} PARTITION OF ${table} FOR VALUES FROM ('${idFloor(from)}') TO ('${idFloor(nextIntervalStart(from, 'month'))}')`);
      }
    }
    await pg.query('SET synchronous_commit = off');
    // the foreign keys' per-row checks skipped: the rows are consistent by construction (account and mailbox 1)
    await pg.query('SET session_replication_role = replica');
    for (const from of months) {
      const span = nextIntervalStart(from, 'month') - from;
      for (let start = 0; start < ROWS; start += 200_000) {
        await pg.query(
          `WITH made AS (
             SELECT n, to_timestamp(($1::float8 + (n::float8 / $3) * $2) / 1000) AS at, md5(n::text || $1::text) AS h FROM generate_series($4::int, $5::int) n
           ), ids AS (
             SELECT n, at, (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid AS id FROM made
           ), m AS (
             INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, smtp_response, sent_at, created_at, updated_at)
             SELECT id, (SELECT min(id) FROM accounts), 1, 'transactional', 'r' || (n % 200000) || '@d' || (n % 5000) || '.example', 'Grown ' || n, '<' || id || '@example.com>',
                    'sent', 1, '250 2.0.0 OK', at, at, at FROM ids
           )
           INSERT INTO message_attempts (message_id, attempt, at, outcome, response) SELECT id, 1, at, 'deferred', '451 4.7.1 try later' FROM ids WHERE n % 10 = 0`,
          [from, span, ROWS, start, Math.min(ROWS, start + 200_000) - 1],
        );
      }
    }
    // as autovacuum leaves a month that ended weeks ago: analysed, its visibility map and BRIN summaries made
    await pg.query('VACUUM (ANALYZE) messages');
    await pg.query('VACUUM (ANALYZE) message_attempts');
  } finally {
    await pg.end();
  }
}

async function main(): Promise<void> {
  const now = Date.now();
  const older = intervalStart(intervalStart(now, 'month') - 70 * 86_400_000, 'month');
  const newer = nextIntervalStart(older, 'month');
  const cutoff = new Date(newer);
  const url = `${SERVER}/${NAME}`;
  const copy = `${NAME}_delete`;
  try {
    await migrate(url);
    const filled = Date.now();
    await fill(url, [older, newer]);
    process.stderr.write(`retention bench: ${(2 * ROWS).toLocaleString('en')} emails filled in ${((Date.now() - filled) / 1000).toFixed(0)} s\n`);
    await admin((pg) => pg.query(`CREATE DATABASE ${copy} TEMPLATE ${NAME}`));

    // the DELETE retention ran before partitions: batches of 1,000 emails (their attempts go by ON DELETE CASCADE)
    const deleting = createDb(`${SERVER}/${copy}`, 2);
    let started = performance.now();
    let deleted = 0;
    for (;;) {
      const n = await deleteOldBatch(deleting, OLD_MESSAGES, cutoff);
      deleted += n;
      if (n < BATCH) break;
    }
    const deleteSeconds = (performance.now() - started) / 1000;
    await deleting.$disconnect();

    // the DROP, in retention's order: the attempts' partition (RETENTION_DAYS), then the emails' (MESSAGE_ROWS_DAYS):
    // its check that nothing in it is still kept, its detach with what points into it, and the drop of the detached tables
    const dropping = createDb(url, 2);
    const partition = partitionName('messages', older);
    started = performance.now();
    const attempts = await dropOldPartitions(dropping, 'message_attempts', cutoff);
    const attemptsSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    const kept = await partitionStillNeeded(dropping, 'messages', partition, cutoff);
    const checkSeconds = (performance.now() - started) / 1000;
    if (kept) throw new Error(`${partition} holds an email still kept`);
    const emails = await dropPartition(dropping, 'messages', (await listPartitions(dropping, 'messages')).find((p) => p.name === partition)!, await referencesTo(dropping, 'messages'));
    const dropSeconds = attemptsSeconds + checkSeconds + (emails.detachMs + emails.dropMs) / 1000;
    await dropping.$disconnect();

    const figures = {
      rowsPerMonth: ROWS,
      deleted,
      deleteSeconds: +deleteSeconds.toFixed(2),
      dropped: [...attempts, ...emails.detached],
      dropSeconds: +dropSeconds.toFixed(3),
      // its parts: the attempts' partition (check, detach, drop), the emails' check, detach (the service's tables
      // locked) and drop (the detached tables' files removed)
      attemptsSeconds: +attemptsSeconds.toFixed(3),
      checkSeconds: +checkSeconds.toFixed(3),
      detachSeconds: +(emails.detachMs / 1000).toFixed(3),
      filesSeconds: +(emails.dropMs / 1000).toFixed(3),
    };
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await admin(async (pg) => {
      await pg.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
      await pg.query(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
    });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
