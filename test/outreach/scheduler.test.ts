import { db } from '../../apps/core/src/db';
import { CLAIM_DUE } from '../../apps/core/src/outreach/repository/claim-due';
import { claimDueSteps } from '../../apps/core/src/outreach/scheduler';
import { makeAccount, makeCampaign, makeMailbox } from '../helpers/factories';

/** Due prospects written straight into the table: `count` of them at `step`, due a minute ago and older. */
async function seedDue(campaignId: number, count: number, options: { step?: number; label: string }) {
  await db().$executeRaw`
    INSERT INTO prospects (campaign_id, email, status, step, next_at, updated_at)
    SELECT ${campaignId}, ${options.label} || '-' || i || '@example.org', 'writing', ${options.step ?? 1}, now() - interval '1 minute' - i * interval '1 second', now()
    FROM generate_series(1, ${count}) AS i`;
}

const twoSteps = [
  { subject: 'One', body: 'x', delay_hours: 0 },
  { subject: 'Two', body: 'y', delay_hours: 1 },
];

describe('the scheduler claims what can go out now, not the whole backlog', () => {
  it('with 600+ due prospects: one per gap-limited mailbox, the rest of a mailbox\'s day, and every closing step', async () => {
    const account = await makeAccount();
    const gapped = await makeMailbox(account.id, { gap_seconds: 60, daily_limit: 500 });
    const open = await makeMailbox(account.id, { gap_seconds: 0, daily_limit: 50 });
    const a = await makeCampaign(account.id, gapped.id, { status: 'running', steps: twoSteps });
    const b = await makeCampaign(account.id, gapped.id, { status: 'running', steps: twoSteps });
    const c = await makeCampaign(account.id, open.id, { status: 'running', steps: twoSteps });
    await seedDue(a.id, 600, { label: 'a' });
    await seedDue(b.id, 10, { label: 'b' });
    await seedDue(c.id, 100, { label: 'c' });
    await seedDue(a.id, 5, { label: 'closing', step: 2 }); // past the last step: they close as no_reply, no slot needed

    const due = await claimDueSteps(db(), { limit: 500 });
    const rows = await db().prospect.findMany({ where: { id: { in: due.map((d) => d.prospectId) } } });
    const by = (campaignId: number, closing: boolean) => rows.filter((r) => r.campaignId === campaignId && (r.step === 2) === closing).length;
    expect(by(a.id, false) + by(b.id, false)).toBe(1); // the gapped mailbox has one slot, shared by its campaigns
    expect(by(a.id, true)).toBe(5);
    expect(by(c.id, false)).toBe(50); // the open mailbox: what is left of its day
    expect(due).toHaveLength(56);
    // the oldest due step of the gapped mailbox's campaigns goes first
    const oldest = await db().prospect.findFirstOrThrow({ where: { campaignId: { in: [a.id, b.id] }, step: 1 }, orderBy: { nextAt: 'asc' } });
    expect(due.map((d) => d.prospectId)).toContain(oldest.id);
    expect(due.find((d) => d.prospectId === oldest.id)!.step).toBe(2);

    // claimed rows wait for their step jobs: the next tick does not claim or queue them again
    expect(await claimDueSteps(db(), { limit: 500 })).toEqual([]);

    // inside its gap, and at its daily cap: the mailboxes give nothing to send; marks older than a minute count as lost
    // jobs, so the closing steps are claimed again
    await db().prospect.updateMany({ where: { campaignId: { in: [a.id, b.id, c.id] } }, data: { queuedAt: new Date(Date.now() - 120_000) } });
    await db().mailbox.update({ where: { id: gapped.id }, data: { sequenceLastAt: new Date() } });
    await db().mailbox.update({ where: { id: open.id }, data: { sequenceDay: new Date(new Date().toISOString().slice(0, 10)), sequenceCount: 50 } });
    const capped = await claimDueSteps(db(), { limit: 500 });
    expect(capped).toHaveLength(5);
    expect(capped.every((d) => d.step === 3)).toBe(true);
  });

  it('never gives the same row to two schedulers claiming at once', async () => {
    const account = await makeAccount();
    const open = await makeMailbox(account.id, { gap_seconds: 0, daily_limit: 1000 });
    const campaign = await makeCampaign(account.id, open.id, { status: 'running', steps: twoSteps });
    await seedDue(campaign.id, 300, { label: 'pair' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = claimDueSteps(db(), { limit: 200 }, () => held);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await claimDueSteps(db(), { limit: 200 });
    release();
    const taken = new Set((await first).map((d) => d.prospectId));
    expect(taken.size).toBe(200);
    expect(second.filter((d) => taken.has(d.prospectId))).toEqual([]);
    // the rest is claimed by the next claim; the first's rows are marked queued and not claimed again
    const rest = await claimDueSteps(db(), { limit: 300 });
    expect(rest.filter((d) => taken.has(d.prospectId))).toEqual([]);
    expect(new Set([...taken, ...second.map((d) => d.prospectId), ...rest.map((d) => d.prospectId)]).size).toBe(300);
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

/**
 * Due rows the plan read from prospects, summed over its scans (rows x loops): not the claimed rows' own lookups by
 * primary key, nor the marks of the last minute (the queued_at index, which the earlier tests' claims fill).
 */
function prospectRowsRead(node: PlanNode): number {
  const counted = node['Relation Name'] === 'prospects' && !['prospects_pkey', 'prospects_queued_at_idx'].includes(node['Index Name'] ?? '') && /Scan$/.test(node['Node Type']);
  const own = counted ? node['Actual Rows'] * node['Actual Loops'] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + prospectRowsRead(child), 0);
}

describe("the claim's plan", () => {
  /**
   * A campaign's prospects before their first step have no mailbox yet. Read through (campaign_id, mailbox_id, next_at),
   * "mailbox_id IS NULL" does not give the planner the next_at order, so each tick read and sorted every due row of
   * every campaign (the scheduler bench's claim went from 21 to 64 ms); the partial index on the unstarted rows gives
   * the oldest first and the claim stops at its limit.
   */
  it('reads about as many unstarted prospects as it claims, not the campaign\'s whole backlog', async () => {
    const account = await makeAccount();
    const open = await makeMailbox(account.id, { gap_seconds: 0, daily_limit: 1000 });
    const campaign = await makeCampaign(account.id, open.id, { status: 'running', steps: twoSteps });
    await db().$executeRaw`
      INSERT INTO prospects (campaign_id, email, status, step, next_at, updated_at)
      SELECT ${campaign.id}, 'backlog-' || i || '@example.org', 'ready', 0, now() - interval '1 minute' - i * interval '1 second', now()
      FROM generate_series(1, 2000) AS i`;
    await db().$executeRawUnsafe('ANALYZE prospects');
    const plan = await db()
      .$transaction(async (tx) => {
        // the choice that matters is between the indexes, whatever else the shared test tables hold
        await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
        await tx.$executeRawUnsafe('SET LOCAL enable_bitmapscan = off');
        const [row] = await tx.$queryRawUnsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_DUE}`, campaign.id, 10);
        throw Object.assign(new Error('rolled back'), { plan: row!['QUERY PLAN'][0].Plan });
      })
      .catch((e: { plan?: PlanNode }) => {
        if (!e.plan) throw e;
        return e.plan;
      });
    expect(plan['Actual Rows']).toBe(10);
    expect(prospectRowsRead(plan)).toBeLessThanOrEqual(40);
    expect(await db().prospect.count({ where: { campaignId: campaign.id, queuedAt: { not: null } } })).toBe(0);
  });

  /**
   * The claim's mark and a written step are updates of `prospects` that are not HOT: each writes an entry into every
   * index whose predicate the row meets. The indexes by site and by link check hold only the rows that have one.
   */
  it("leaves the site and link-check indexes to the prospects that have a site or a link check", async () => {
    const rows = await db().$queryRaw<{ indexname: string; indexdef: string }[]>`
      SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'prospects'
        AND indexname IN ('prospects_campaign_id_site_idx', 'prospects_link_check_at_idx') ORDER BY indexname`;
    expect(rows.map((r) => [r.indexname, r.indexdef.replace(/^.* WHERE /, '')])).toEqual([
      ['prospects_campaign_id_site_idx', '(site IS NOT NULL)'],
      ['prospects_link_check_at_idx', '(link_check_at IS NOT NULL)'],
    ]);
  });
});
