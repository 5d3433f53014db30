import { db } from '../../apps/core/src/db';
import { effectiveDailyLimit } from '../../apps/core/src/mailboxes/daily-limit';
import { claimMailboxSlot } from '../../apps/core/src/outreach/limits';
import { claimDueSteps } from '../../apps/core/src/outreach/scheduler';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeCampaign, makeMailbox } from '../helpers/factories';

/**
 * Pacing like a person and warm-up (docs/outreach.md). The clock is moved by writing the moments the rules count from
 * (the last email, the day the warm-up was set): no test waits.
 */
const ctx = useApi();
const DAY = 86_400_000;

/** The mailbox as GET /admin/api/mailboxes shows it. */
async function shown(mailboxId: number) {
  const res = await asAdmin(ctx.api).get('/admin/api/mailboxes').expect(200);
  return res.body.mailboxes.find((m: { id: number }) => m.id === mailboxId);
}

const claim = (mailboxId: number) => db().$transaction((tx) => claimMailboxSlot(tx, mailboxId));

describe('gap_jitter', () => {
  it('draws the wait after each email uniformly from [gap, gap x (1 + jitter)], and waits exactly gap with 0', async () => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id, { gap_seconds: 100, daily_limit: 10_000 });
    await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${mailbox.id}`).send({ gap_jitter: 0.5 }).expect(200);
    const gaps: number[] = [];
    for (let i = 0; i < 40; i++) {
      expect(await claim(mailbox.id)).toMatchObject({ claimed: true });
      const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
      gaps.push(row.sequenceGap!);
      // inside the drawn wait the next claim is refused until exactly last + drawn gap
      const refused = await claim(mailbox.id);
      expect(refused).toMatchObject({ claimed: false, why: 'gap' });
      expect(Math.abs((refused as { until: Date }).until.getTime() - (row.sequenceLastAt!.getTime() + row.sequenceGap! * 1000))).toBeLessThanOrEqual(1);
      // the clock moves past the wait
      await db().mailbox.update({ where: { id: mailbox.id }, data: { sequenceLastAt: new Date(Date.now() - 151_000) } });
    }
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(150);
    expect(new Set(gaps.map((g) => Math.round(g))).size).toBeGreaterThan(5); // drawn, not fixed
    await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${mailbox.id}`).send({ gap_jitter: 0 }).expect(200);
    await claim(mailbox.id);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } })).sequenceGap).toBe(100);
  });

  it('is 0.3 by default, shown by GET, and refused outside 0-1 without storing anything', async () => {
    const account = await makeAccount();
    const admin = asAdmin(ctx.api);
    const mailbox = await makeMailbox(account.id);
    expect(await shown(mailbox.id)).toMatchObject({ gap_jitter: 0.3, warmup: null, effective_daily_limit: 50 });
    for (const bad of [-0.1, 1.5, 'lots']) {
      const refused = await admin.patch(`/admin/api/mailboxes/${mailbox.id}`).send({ gap_jitter: bad }).expect(400);
      expect(refused.body).toEqual({ ok: false, error: expect.stringMatching(/gap_jitter/) });
    }
    const created = await admin
      .post('/admin/api/mailboxes')
      .send({ account: account.id, address: 'jitter@ex.org', smtp: 'smtp://127.0.0.1:2525', gap_jitter: 2 })
      .expect(400);
    expect(created.body.error).toMatch(/gap_jitter/);
    expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(1);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } })).gapJitter).toBe(0.3);
  });
});

describe('warm-up', () => {
  it('caps the day at min(daily_limit, start + step x whole days since it was set), in the claim, the scheduler and GET', async () => {
    const account = await makeAccount();
    const admin = asAdmin(ctx.api);
    const mailbox = await makeMailbox(account.id, { gap_seconds: 0, daily_limit: 50 });
    const set = await admin.patch(`/admin/api/mailboxes/${mailbox.id}`).send({ warmup: { start: 5, step: 10 } }).expect(200);
    expect(set.body.mailbox).toMatchObject({ warmup: { start: 5, step: 10, since: expect.any(String) }, effective_daily_limit: 5, daily_limit: 50 });

    // day 0: five, then no more today
    for (let i = 0; i < 5; i++) expect(await claim(mailbox.id)).toMatchObject({ claimed: true });
    expect(await claim(mailbox.id)).toMatchObject({ claimed: false, why: 'daily_limit' });

    // two whole days later (the warm-up's start moved back): 5 + 2 x 10 = 25
    await db().mailbox.update({ where: { id: mailbox.id }, data: { warmupSince: new Date(Date.now() - 2 * DAY - 60_000) } });
    expect((await shown(mailbox.id)).effective_daily_limit).toBe(25);
    for (let i = 5; i < 25; i++) expect(await claim(mailbox.id)).toMatchObject({ claimed: true });
    expect(await claim(mailbox.id)).toMatchObject({ claimed: false, why: 'daily_limit' });

    // the scheduler sees the same cap: a new day with 30 due prospects claims 25 of them
    const campaign = await makeCampaign(account.id, mailbox.id, { status: 'running', steps: [{ subject: 's', body: 'b', delay_hours: 0 }, { subject: 's', body: 'b', delay_hours: 1 }] });
    await db().$executeRaw`
      INSERT INTO prospects (campaign_id, email, status, step, next_at, updated_at)
      SELECT ${campaign.id}, 'w' || i || '@ex.org', 'ready', 0, now() - interval '1 minute', now() FROM generate_series(1, 30) AS i`;
    await db().mailbox.update({ where: { id: mailbox.id }, data: { sequenceDay: new Date(Date.now() - DAY), sequenceCount: 25 } });
    expect(await claimDueSteps(db(), { campaignId: campaign.id, limit: 500 })).toHaveLength(25);

    // never past daily_limit: ten days in, 105 > 50
    await db().mailbox.update({ where: { id: mailbox.id }, data: { warmupSince: new Date(Date.now() - 10 * DAY) } });
    expect((await shown(mailbox.id)).effective_daily_limit).toBe(50);

    // null ends it
    const ended = await admin.patch(`/admin/api/mailboxes/${mailbox.id}`).send({ warmup: null }).expect(200);
    expect(ended.body.mailbox).toMatchObject({ warmup: null, effective_daily_limit: 50 });
  });

  it('counts whole days only', () => {
    const since = new Date('2026-01-01T12:00:00Z');
    const m = { dailyLimit: 100, warmupStart: 10, warmupStep: 5, warmupSince: since };
    expect(effectiveDailyLimit(m, new Date('2026-01-02T11:59:59Z'))).toBe(10);
    expect(effectiveDailyLimit(m, new Date('2026-01-02T12:00:00Z'))).toBe(15);
    expect(effectiveDailyLimit(m, new Date('2026-03-01T12:00:00Z'))).toBe(100);
    expect(effectiveDailyLimit({ ...m, warmupStart: null, warmupSince: null }, since)).toBe(100);
  });

  it.each([
    [{ start: 5, step: -1 }, /step/],
    [{ start: -5, step: 1 }, /start/],
    [{ start: 5 }, /step/],
    ['fast', /warmup/],
  ])('refuses warmup %j with 400 naming the field, storing nothing', async (warmup, words) => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id);
    const refused = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${mailbox.id}`).send({ warmup }).expect(400);
    expect(refused.body).toEqual({ ok: false, error: expect.stringMatching(words) });
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } })).warmupStart).toBeNull();
  });
});
