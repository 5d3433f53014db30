/**
 * What the daily counters add to the worker's "sent" statement (docs/analytics.md), measured on Postgres alone: the
 * claim and the mark with and without the mark's counter CTE (`sent` and `delivered` in one row update), in turns, over batches of the size the worker's
 * batchers make (5 rows: bench/README.md saw claims of 5.6 and marks of 3.1 rows). What is measured is the CPU of
 * the Postgres backend running them (utime + stime of /proc/<pg_backend_pid()>/stat, so Postgres on this machine),
 * which the load of other processes moves far less than wall time. Not part of `npm run bench`:
 * `npx tsx bench/counters.ts` against a scratch database it makes and drops.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Client } from 'pg';
import { countMessagesSql } from '../apps/core/src/analytics/repository';
import { migrate } from '../apps/core/src/migrate';

const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const ROWS = Number(process.env.BENCH_ROWS ?? 4_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);

/** CPU milliseconds a process has used (utime + stime, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const claim = () => `
WITH claimed AS (
  UPDATE messages SET status = 'sending', locked_until = now() + interval '1 minute', attempts = attempts + 1, updated_at = now()
  WHERE id = ANY($1::uuid[]) AND status::text IN ('queued', 'deferred')
  RETURNING *
)
SELECT c.id FROM claimed c`;

const mark = (counted: boolean) => `
WITH marked AS (
  UPDATE messages m SET status = 'sent', sent_at = now(), smtp_response = '250 ok', locked_until = NULL, updated_at = now()
  WHERE m.id = ANY($1::uuid[]) AND m.status::text = 'sending'
  RETURNING m.*
)${counted ? `, counted AS (${countMessagesSql('marked', ['sent', 'delivered'])})` : ''}
SELECT count(*) FROM marked`;

async function main() {
  const name = `ms_bench_counters_${process.pid}`;
  const admin = new Client({ connectionString: `${SERVER}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = `${SERVER}/${name}`;
  try {
    await migrate(url);
    const pg = new Client({ connectionString: url });
    await pg.connect();
    await pg.query(`SET jit = off`);
    const backend = Number((await pg.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    await pg.query(`INSERT INTO accounts (name) VALUES ('bench')`);
    await pg.query(`INSERT INTO mailboxes (account_id, address, smtp_host, smtp_port) VALUES (1, 'a@bench.test', '127.0.0.1', 25)`);
    const results = { plain: [] as number[], counted: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const variant of (round % 2 ? ['counted', 'plain'] : ['plain', 'counted']) as ('plain' | 'counted')[]) {
        const ids = Array.from({ length: ROWS }, () => crypto.randomUUID());
        await pg.query(
          `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header)
           SELECT id, 1, 1, 'transactional', 'r@x.test', 's', '<' || id || '@bench.test>' FROM unnest($1::uuid[]) AS id`,
          [ids],
        );
        await pg.query('VACUUM ANALYZE messages');
        const counted = variant === 'counted';
        const started = cpuMs(backend);
        for (let i = 0; i < ids.length; i += BATCH) {
          const batch = ids.slice(i, i + BATCH);
          await pg.query({ name: `claim-${variant}`, text: claim(), values: [batch] });
          await pg.query({ name: `mark-${variant}`, text: mark(counted), values: [batch] });
        }
        const ms = cpuMs(backend) - started;
        results[variant].push(ms / ROWS);
        console.log(`round ${round + 1} ${variant}: ${(ms / ROWS).toFixed(4)} ms of Postgres CPU an email (claim + mark, batches of ${BATCH})`);
      }
    }
    const [{ sent, delivered }] = (await pg.query(`SELECT sum(sent)::int AS sent, sum(delivered)::int AS delivered FROM daily_counts`)).rows;
    console.log(`counters: sent ${sent}, delivered ${delivered} (expected ${ROWS * ROUNDS} each)`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(JSON.stringify({ plain: results.plain, counted: results.counted, medianPlain: median(results.plain), medianCounted: median(results.counted) }));
    await pg.end();
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
