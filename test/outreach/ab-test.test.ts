import { db } from '../../apps/core/src/db';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { asAdmin, useApi } from '../helpers/api';
import { SmtpSink } from '../helpers/smtp-sink';
import { addProspect, outreach, stepMessage } from './support';

/**
 * A/B variants on a campaign step: each prospect gets a variant by a deterministic hash, the stats count
 * each arm, and the winner rule picks one only when the two-proportion test says p < 0.05 with the minimum sample in
 * each arm; after that every prospect gets the winner. Replies are seeded on the rows (the A/B arithmetic is what is
 * under test here; branches.test.ts drives answers through the inbound path).
 */
const ctx = useApi();
const sink = new SmtpSink();
beforeAll(async () => {
  await sink.start();
});
afterAll(async () => {
  await sink.stop();
});

const variants = [
  { subject: 'Quick question, {{name}}', body: 'Short one', weight: 1 },
  { subject: 'A long story, {{name}}', body: 'Long one', weight: 1 },
];

/** A campaign whose first step is an A/B test, `people` prospects written to, and the replies each arm drew. */
async function seeded(people: number, replyShare: [number, number]) {
  const { tenant, campaign } = await outreach({
    smtp: sink.url,
    steps: [{ id: 'opener', delay_hours: 0, variants, winner: { metric: 'replies', after_hours: 0, min_sample: 40 } }],
  });
  const ids: number[] = [];
  for (let i = 0; i < people; i++) ids.push(await addProspect(tenant.account.id, campaign.id, { email: `p${i}@ex.org`, name: `P${i}` }));
  // every reply comes after all the emails went out: the test is judged once, on the replies seeded below
  for (const id of ids) expect((await runSequenceStep(db(), id, 1)).kind).toBe('written');
  const arms: number[][] = [[], []];
  for (const id of ids) arms[(await stepMessage(id, 1))!.variant!]!.push(id);
  for (const [variant, members] of arms.entries()) {
    const replied = members.slice(0, Math.round(members.length * replyShare[variant]!));
    await db().prospect.updateMany({ where: { id: { in: replied } }, data: { status: 'replied', reply: 'human', repliedAt: new Date() } });
  }
  return { tenant, campaign, arms };
}

const statsOf = async (campaignId: number) => (await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaignId}/stats`).expect(200)).body.stats;

describe('A/B variants on a step', () => {
  it('assigns variants by a fixed hash, writes each with its own subject and body, and counts each arm', async () => {
    const { campaign, arms } = await seeded(120, [0, 0]);
    // both arms are used, in about the weights, and a prospect's variant is its own: written again it is the same
    expect(arms[0]!.length).toBeGreaterThan(40);
    expect(arms[1]!.length).toBeGreaterThan(40);
    const one = (await stepMessage(arms[1]![0]!, 1))!;
    expect(one.subject).toMatch(/^A long story, P\d+$/);
    expect(one.text).toBe('Long one');
    const stats = await statsOf(campaign.id);
    expect(stats.tests).toEqual([
      {
        step: 'opener',
        variants: [
          { variant: 0, subject: variants[0]!.subject, weight: 1, sent: arms[0]!.length, replied: 0, clicked: 0 },
          { variant: 1, subject: variants[1]!.subject, weight: 1, sent: arms[1]!.length, replied: 0, clicked: 0 },
        ],
        winner: { metric: 'replies', after_hours: 0, min_sample: 40 },
        verdict: { winner: 'no winner', p: 1, why: 'no significant difference' },
      },
    ]);
  });

  it('picks the winner of a real difference, and every later prospect gets it', async () => {
    const { tenant, campaign, arms } = await seeded(120, [0.05, 0.4]);
    const stats = await statsOf(campaign.id);
    expect(stats.tests[0].verdict).toEqual({ winner: 1, p: expect.any(Number) });
    expect(stats.tests[0].verdict.p).toBeLessThan(0.05);
    expect(stats.tests[0].variants.map((v: { replied: number }) => v.replied)).toEqual([Math.round(arms[0]!.length * 0.05), Math.round(arms[1]!.length * 0.4)]);
    // the next write judges the test and keeps the winner
    const late: number[] = [];
    for (let i = 0; i < 10; i++) late.push(await addProspect(tenant.account.id, campaign.id, { email: `late${i}@ex.org`, name: 'L' }));
    for (const id of late) await runSequenceStep(db(), id, 1);
    for (const id of late) expect((await stepMessage(id, 1))!.variant).toBe(1);
    expect(await db().campaignStep.findFirstOrThrow({ where: { campaignId: campaign.id } })).toMatchObject({ chosenVariant: 1 });
    expect((await statsOf(campaign.id)).tests[0].verdict).toEqual({ winner: 1, p: null });
  });

  it('reports "no winner" without a real difference, and later prospects still get both variants by weight', async () => {
    const { tenant, campaign } = await seeded(120, [0.2, 0.25]);
    const stats = await statsOf(campaign.id);
    expect(stats.tests[0].verdict).toMatchObject({ winner: 'no winner', why: 'no significant difference' });
    expect(stats.tests[0].verdict.p).toBeGreaterThan(0.05);
    const late: number[] = [];
    for (let i = 0; i < 30; i++) late.push(await addProspect(tenant.account.id, campaign.id, { email: `late${i}@ex.org`, name: 'L' }));
    for (const id of late) await runSequenceStep(db(), id, 1);
    const used = new Set(await Promise.all(late.map(async (id) => (await stepMessage(id, 1))!.variant)));
    expect(used).toEqual(new Set([0, 1]));
    expect(await db().campaignStep.findFirstOrThrow({ where: { campaignId: campaign.id } })).toMatchObject({ chosenVariant: null });
  });
});
