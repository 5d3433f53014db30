import { db } from '../../apps/core/src/db';
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
