/**
 * The outreach scheduler's phase of `npm run bench`: 100,000 due prospects in 200 running campaigns on 50 mailboxes.
 * - the scheduler's cost per tick (claim + queueing the step jobs), with every mailbox free and with every mailbox
 *   inside its gap, and per minute at the worker's 5-second schedule;
 * - the issue's own case: 1,200 due prospects on one mailbox with a 60-second gap (the old scheduler re-claimed and
 *   re-queued all 1,200 every tick, 4.7-5.3 s of work a minute);
 * - the steps a worker writes and delivers per second from that backlog, over `seconds`.
 * Runs in the bench's process against a database of its own (the services' code, imported once the env is set).
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';

export interface SchedulerFigures {
  prospects: number;
  tickAllFreeMs: number;
  tickAllInGapMs: number;
  cpuPerMinuteAllFreeMs: number;
  oneGappedMailbox1200: { tickMs: number; claimed: number; cpuPerMinuteMs: number };
  stepsPerSecond: number;
  /**
   * Sending windows (docs/outreach.md): the claim with a window on every campaign (the claim does not read it: the
   * step's next_at is put at the opening when it is scheduled), and the window check itself for 100,000 due prospects
   * in 24 time zones, half of them outside their window (what the step writer and the adds run, per prospect).
   */
  windows: { tickAllFreeMs: number; check100kMs: number; checkUsPerProspect: number };
  /**
   * Mailbox rotation (docs/campaigns.md): the same 200 campaigns each sending over 5 of the 50 mailboxes, the claim with
   * every prospect before its first step (any mailbox of its rotation may take it), then with half of them started
   * (each tied to its first mailbox); `claimed`: rows the first of those claims took.
   */
  rotation: { tickAllFreeMs: number; tickHalfStartedMs: number; claimed: number };
  /**
   * Branches (docs/outreach.md): every campaign's sequence an email, a condition and two branches of one email each;
   * the claim with every prospect before its first step, in turns with the linear sequence (same marks, same moment),
   * then with half of them waiting at the condition, due.
   */
  branches: { linearTurnsMs: number[]; branchedTurnsMs: number[]; linearMs: number; tickAllFreeMs: number; tickHalfAtConditionMs: number };
}

const MAILBOXES = 50;
const CAMPAIGNS_PER_MAILBOX = 4;
const PROSPECTS_PER_CAMPAIGN = 500;
const EVERY_MS = 5_000;

/** Mean wall time of `runs` calls after one warm-up call. */
async function timed<T>(runs: number, work: () => Promise<T>): Promise<{ ms: number; last: T }> {
  let last = await work();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) last = await work();
  return { ms: +((performance.now() - t0) / runs).toFixed(1), last };
}

export async function schedulerPhase(options: {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  sinkSmtpPort: number;
  seconds: number;
  startWorker: () => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
}): Promise<SchedulerFigures> {
  const { migrate } = await import('../apps/core/src/migrate');
  await migrate(options.databaseUrl);
  const pg = new Client({ connectionString: options.databaseUrl });
  await pg.connect();
  const { rows: [account] } = await pg.query<{ id: number }>(`INSERT INTO accounts (name) VALUES ('bench scheduler') RETURNING id`);
  await pg.query(
    `INSERT INTO mailboxes (account_id, address, smtp_host, smtp_port, daily_limit, gap_seconds, updated_at)
     SELECT $1, 'm' || i || '@bench.example', '127.0.0.1', $2, 100000, 0, now() FROM generate_series(1, $3) AS i`,
    [account!.id, options.sinkSmtpPort, MAILBOXES],
  );
  await pg.query(
    `INSERT INTO campaigns (account_id, mailbox_id, name, goal, status, updated_at)
     SELECT $1, m.id, 'c' || m.id || '-' || j, 'links', 'running', now()
     FROM mailboxes m CROSS JOIN generate_series(1, $2) AS j WHERE m.account_id = $1`,
    [account!.id, CAMPAIGNS_PER_MAILBOX],
  );
  await pg.query(
    `INSERT INTO campaign_steps (campaign_id, position, key, subject, body, delay_hours)
     SELECT c.id, s.position, s.position::text, 'Step ' || s.position || ' for {{name}}', 'Hello {{name}}', s.delay
     FROM campaigns c CROSS JOIN (VALUES (1, 0.0), (2, 24.0)) AS s(position, delay) WHERE c.account_id = $1`,
    [account!.id],
  );
  await pg.query(
    `INSERT INTO prospects (campaign_id, email, name, status, next_at, updated_at)
     SELECT c.id, 'p' || c.id || '-' || i || '@reader.example', 'Reader', 'ready', now() - i * interval '1 millisecond', now()
     FROM campaigns c CROSS JOIN generate_series(1, $2) AS i WHERE c.account_id = $1`,
    [account!.id, PROSPECTS_PER_CAMPAIGN],
  );
  await pg.query('ANALYZE');
  const prospects = MAILBOXES * CAMPAIGNS_PER_MAILBOX * PROSPECTS_PER_CAMPAIGN;

  Object.assign(process.env, { DATABASE_URL: options.databaseUrl, REDIS_URL: options.redisUrl, REDIS_PREFIX: options.redisPrefix, LOG_LEVEL: 'warn' });
  const { db, closeDb } = await import('../apps/core/src/db');
  const { closeQueues } = await import('../apps/core/src/queues');
  const { closeRedis } = await import('../apps/core/src/redis');
  const { claimDueSteps } = await import('../apps/core/src/outreach/scheduler');
  // claims only (no queueing): the statement's cost, with every mailbox free, then with every mailbox inside its gap
  const allFree = await timed(5, () => claimDueSteps(db(), { limit: 500 }));
  // the same claim with a sending window on every campaign, then the window check of 100,000 prospects
  await pg.query(`UPDATE campaigns SET schedule = '{"timezone": "Europe/Berlin", "days": [1,2,3,4,5,6,7], "from": "00:00", "to": "24:00"}' WHERE account_id = $1`, [account!.id]);
  const withWindows = await timed(5, () => claimDueSteps(db(), { limit: 500 }));
  await pg.query(`UPDATE campaigns SET schedule = NULL WHERE account_id = $1`, [account!.id]);
  const rotation = await rotationClaims(pg, account!.id, () => claimDueSteps(db(), { limit: 500 }));
  const branches = await branchClaims(pg, account!.id, () => claimDueSteps(db(), { limit: 500 }));
  const { windowedAt } = await import('../apps/core/src/outreach/windows');
  const zones = ['UTC', 'Europe/Berlin', 'Europe/London', 'Europe/Paris', 'America/New_York', 'America/Chicago', 'America/Denver', 'America/Los_Angeles',
    'America/Sao_Paulo', 'Asia/Tokyo', 'Asia/Kolkata', 'Asia/Shanghai', 'Asia/Singapore', 'Australia/Sydney', 'Africa/Lagos', 'Europe/Moscow',
    'Pacific/Auckland', 'America/Mexico_City', 'Asia/Dubai', 'Europe/Madrid', 'Europe/Warsaw', 'America/Toronto', 'Asia/Seoul', 'Atlantic/Reykjavik'];
  const office = { timezone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], from: '09:00', to: '17:00' };
  const fields = Array.from({ length: prospects }, (_, i) => ({ timezone: zones[i % zones.length] }));
  const due = new Date();
  const t0check = performance.now();
  let moved = 0;
  for (const f of fields) if (windowedAt(office, f, due).getTime() !== due.getTime()) moved++;
  const check100kMs = +(performance.now() - t0check).toFixed(1);
  if (moved === 0 || moved === prospects) console.warn(`window check: ${moved} of ${prospects} moved (expected some of each)`);
  await pg.query(`UPDATE mailboxes SET gap_seconds = 60, sequence_last_at = now() WHERE account_id = $1`, [account!.id]);
  const allInGap = await timed(5, () => claimDueSteps(db(), { limit: 500 }));

  // the case: one mailbox with a 60 s gap and 1,200 due prospects (its other campaigns closed), claim + queueing
  const { rows: [gapped] } = await pg.query<{ id: number }>(`SELECT id FROM mailboxes WHERE account_id = $1 ORDER BY id LIMIT 1`, [account!.id]);
  await pg.query(`UPDATE mailboxes SET sequence_last_at = NULL WHERE id = $1`, [gapped!.id]);
  await pg.query(`UPDATE campaigns SET status = 'paused' WHERE account_id = $1 AND mailbox_id <> $2`, [account!.id, gapped!.id]);
  await pg.query(
    `UPDATE prospects SET status = 'lost', reason = 'bench', next_at = NULL WHERE id IN (
       SELECT p.id FROM prospects p JOIN campaigns c ON c.id = p.campaign_id WHERE c.mailbox_id = $1 ORDER BY p.id OFFSET 1200)`,
    [gapped!.id],
  );
  const { scheduleDueSteps } = await import('../apps/core/src/outreach/scheduler');
  const oneGapped = await timed(5, () => scheduleDueSteps(db()));

  // steps per second: a worker writes and delivers the backlog with every mailbox free again
  await pg.query(`UPDATE mailboxes SET gap_seconds = 0, sequence_last_at = NULL WHERE account_id = $1`, [account!.id]);
  await pg.query(`UPDATE campaigns SET status = 'running' WHERE account_id = $1`, [account!.id]);
  await closeQueues();
  await closeRedis();
  await closeDb();
  const worker = options.startWorker();
  const sent = async () => Number((await pg.query(`SELECT count(*) FROM messages WHERE kind = 'sequence' AND status = 'sent'`)).rows[0].count);
  const warmUntil = Date.now() + 60_000;
  while ((await sent()) < 200 && Date.now() < warmUntil) await new Promise((r) => setTimeout(r, 250));
  const before = await sent();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, options.seconds * 1000));
  const stepsPerSecond = Math.round(((await sent()) - before) / ((performance.now() - t0) / 1000));
  await options.stop(worker);
  await pg.end();

  const perMinute = (ms: number) => Math.round((ms * 60_000) / EVERY_MS);
  return {
    prospects,
    tickAllFreeMs: allFree.ms,
    tickAllInGapMs: allInGap.ms,
    cpuPerMinuteAllFreeMs: perMinute(allFree.ms),
    oneGappedMailbox1200: { tickMs: oneGapped.ms, claimed: oneGapped.last, cpuPerMinuteMs: perMinute(oneGapped.ms) },
    stepsPerSecond,
    windows: { tickAllFreeMs: withWindows.ms, check100kMs, checkUsPerProspect: +((check100kMs * 1000) / prospects).toFixed(2) },
    rotation,
    branches,
  };
}

/**
 * The claim over branched sequences: each campaign's steps become intro, a `not_replied` condition and two one-email
 * branches; first with nobody started, then with half of each campaign's prospects sent the intro and waiting at the
 * condition, due. The steps and rows are put back as they were afterwards.
 */
async function branchClaims(pg: Client, account: number, claim: () => Promise<unknown[]>): Promise<SchedulerFigures['branches']> {
  await pg.query(`CREATE TEMP TABLE bench_marks AS SELECT id, queued_at FROM prospects WHERE queued_at IS NOT NULL`);
  await pg.query(`CREATE TEMP TABLE bench_steps AS SELECT s.* FROM campaign_steps s JOIN campaigns c ON c.id = s.campaign_id WHERE c.account_id = $1`, [account]);
  const linearSteps = async () => {
    await pg.query(`DELETE FROM campaign_steps s USING campaigns c WHERE c.id = s.campaign_id AND c.account_id = $1`, [account]);
    await pg.query(`INSERT INTO campaign_steps SELECT * FROM bench_steps`);
  };
  const branchedSteps = async () => {
    await pg.query(`DELETE FROM campaign_steps s USING campaigns c WHERE c.id = s.campaign_id AND c.account_id = $1`, [account]);
    await pg.query(
      `INSERT INTO campaign_steps (campaign_id, position, key, kind, condition, subject, body, delay_hours)
       SELECT c.id, s.position, s.key, s.kind, s.condition::jsonb, s.subject, 'Hello {{name}}', s.delay
       FROM campaigns c CROSS JOIN (VALUES
         (1, 'intro', 'email', NULL, 'Hello {{name}}', 0.0),
         (2, 'check', 'condition', '{"if": "not_replied", "within_hours": 48, "then": "nudge", "else": "thanks"}', '', 0.0),
         (3, 'nudge', 'email', NULL, 'Any news, {{name}}?', 0.0),
         (4, 'thanks', 'email', NULL, 'Thanks, {{name}}', 0.0)
       ) AS s(position, key, kind, condition, subject, delay) WHERE c.account_id = $1`,
      [account],
    );
  };
  // linear and branched in turns (three each, the median kept), each from no marks: on a busy host both see its load
  const measure = async (steps: () => Promise<void>) => {
    await steps();
    await pg.query(`UPDATE prospects SET queued_at = NULL WHERE queued_at IS NOT NULL`);
    await pg.query('ANALYZE campaign_steps');
    return (await timed(5, claim)).ms;
  };
  const linear: number[] = [];
  const branched: number[] = [];
  for (let turn = 0; turn < 3; turn++) {
    linear.push(await measure(linearSteps));
    branched.push(await measure(branchedSteps));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
  await pg.query(`UPDATE prospects SET queued_at = NULL WHERE queued_at IS NOT NULL`);
  await pg.query(
    `UPDATE prospects p SET step = 1, status = 'writing', node = 'check', node_since = now() - interval '49 hours', mailbox_id = c.mailbox_id
     FROM campaigns c WHERE c.id = p.campaign_id AND c.account_id = $1 AND p.id % 2 = 0`,
    [account],
  );
  await pg.query('ANALYZE prospects');
  const halfAtCondition = await timed(5, claim);
  await pg.query(`UPDATE prospects SET step = 0, status = 'ready', mailbox_id = NULL, node = NULL, node_since = NULL, queued_at = NULL WHERE node IS NOT NULL OR queued_at IS NOT NULL`);
  await pg.query(`UPDATE prospects p SET queued_at = b.queued_at FROM bench_marks b WHERE b.id = p.id`);
  await linearSteps();
  await pg.query(`DROP TABLE bench_marks`);
  await pg.query(`DROP TABLE bench_steps`);
  await pg.query('ANALYZE');
  return { linearTurnsMs: linear, branchedTurnsMs: branched, linearMs: median(linear), tickAllFreeMs: median(branched), tickHalfAtConditionMs: halfAtCondition.ms };
}

/**
 * The claim with every campaign rotating over 5 mailboxes (its own and 4 others, 10 apart), each mailbox in 20
 * rotations; first with every prospect before its first step, then with half of each campaign's started from one of its
 * mailboxes. The rows are put back as they were afterwards (one mailbox a campaign, nobody started).
 */
async function rotationClaims(pg: Client, account: number, claim: () => Promise<unknown[]>): Promise<SchedulerFigures['rotation']> {
  // the claims before left their queued_at marks: kept aside and put back, so the phases after see what they saw before
  await pg.query(`CREATE TEMP TABLE bench_marks AS SELECT id, queued_at FROM prospects WHERE queued_at IS NOT NULL`);
  await pg.query(`UPDATE prospects SET queued_at = NULL WHERE queued_at IS NOT NULL`);
  await pg.query(
    `WITH mb AS (SELECT id, (row_number() OVER (ORDER BY id) - 1)::int AS i FROM mailboxes WHERE account_id = $1),
          cb AS (SELECT c.id, mb.i FROM campaigns c JOIN mb ON mb.id = c.mailbox_id WHERE c.account_id = $1)
     INSERT INTO campaign_mailboxes (campaign_id, mailbox_id, position)
     SELECT cb.id, mb.id, k + 1 FROM cb CROSS JOIN generate_series(0, 4) AS k JOIN mb ON mb.i = (cb.i + k * 10) % ${MAILBOXES}
     ON CONFLICT DO NOTHING`,
    [account],
  );
  await pg.query('ANALYZE campaign_mailboxes');
  const allFree = await timed(5, claim);
  const claimed = allFree.last.length;
  await pg.query(`UPDATE prospects SET queued_at = NULL WHERE queued_at IS NOT NULL`);
  await pg.query(
    `UPDATE prospects p SET step = 1, status = 'writing', mailbox_id = cm.mailbox_id
     FROM campaign_mailboxes cm WHERE cm.campaign_id = p.campaign_id AND cm.position = 1 + p.id % 5 AND p.id % 2 = 0`,
  );
  await pg.query('ANALYZE prospects');
  const halfStarted = await timed(5, claim);
  await pg.query(`UPDATE prospects SET step = 0, status = 'ready', mailbox_id = NULL, queued_at = NULL WHERE mailbox_id IS NOT NULL OR queued_at IS NOT NULL`);
  await pg.query(`UPDATE prospects p SET queued_at = b.queued_at FROM bench_marks b WHERE b.id = p.id`);
  await pg.query(`DROP TABLE bench_marks`);
  await pg.query(`DELETE FROM campaign_mailboxes cm USING campaigns c WHERE c.id = cm.campaign_id AND c.account_id = $1`, [account]);
  await pg.query('ANALYZE');
  return { tickAllFreeMs: allFree.ms, tickHalfStartedMs: halfStarted.ms, claimed };
}
