import { db } from '../../apps/core/src/db';
import { campaignStats } from '../../apps/core/src/outreach/stats';
import { asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';

/** GET /admin/api/campaigns/:id/stats (docs/outreach.md), over rows written with the moments the test chooses. */
const ctx = useApi();
const DAY = 86_400_000;

async function seed() {
  const tenant = await makeTenant({ prospects: true });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, {
    status: 'running',
    steps: [
      { subject: 'a', body: 'a', delay_hours: 0 },
      { subject: 'b', body: 'b', delay_hours: 24 },
    ],
  });
  const today = new Date();
  const yesterday = new Date(today.getTime() - DAY);
  const prospect = async (email: string, data: Record<string, unknown>) => (await db().prospect.create({ data: { campaignId: campaign.id, email, ...data } })).id;
  const email = async (prospectId: number, step: number, status: 'sent' | 'bounced' | 'failed', sentAt: Date | null, extra: Record<string, unknown> = {}) => {
    const id = crypto.randomUUID();
    await db().message.create({
      data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'sequence', prospectId, step, to: `${prospectId}@x.org`, subject: 's', messageIdHeader: `<${id}@x.org>`, status, sentAt, ...extra },
    });
    return id;
  };
  // replied (a person) after step 1, yesterday
  const ann = await prospect('ann@x.org', { status: 'replied', step: 1, reply: 'human', repliedAt: yesterday });
  await email(ann, 1, 'sent', yesterday);
  // an out-of-office after step 2
  const bob = await prospect('bob@x.org', { status: 'later', step: 2, reply: 'auto' });
  await email(bob, 1, 'sent', yesterday);
  await email(bob, 2, 'sent', today);
  // a dead address: 550 at RCPT today
  const cat = await prospect('cat@x.org', { status: 'lost', reason: 'bounced', step: 1, reply: 'bounce' });
  await email(cat, 1, 'bounced', null, { smtpResponse: '550 5.1.1 no such user' });
  // unsubscribed after step 1, and complained about it
  const dan = await prospect('dan@x.org', { status: 'lost', reason: 'unsubscribed', step: 1 });
  const danEmail = await email(dan, 1, 'sent', today);
  await db().inboundMessage.create({ data: { mailboxId: tenant.mailbox.id, uidValidity: 1n, uid: 1n, kind: 'complaint', fromAddress: 'abuse@isp', subject: 'c', relatedId: danEmail, receivedAt: today } });
  // not written to yet
  await prospect('eve@x.org', { status: 'ready', step: 0, nextAt: today });
  return { campaign, today, yesterday };
}

describe('campaign stats', () => {
  it('counts prospects by status, each step, the rates and the last 30 days', async () => {
    const { campaign, today, yesterday } = await seed();
    const res = await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}/stats`).expect(200);
    const { stats } = res.body;
    expect(res.body.ok).toBe(true);
    expect(stats.prospects).toEqual({ new: 0, ready: 1, writing: 0, hold: 0, later: 1, replied: 1, agreed: 0, placed: 0, lost: 2 });
    expect(stats.steps).toEqual([
      { step: 1, sent: 3, bounced: 1, replied: 1, auto_replied: 0, unsubscribed: 1 },
      { step: 2, sent: 1, bounced: 0, replied: 0, auto_replied: 1, unsubscribed: 0 },
    ]);
    // 1 reply of 4 prospects written to; 1 dead bounce and 1 complaint of 5 ended emails
    expect(stats.rates).toEqual({ reply: 0.25, bounce: 0.2, complaint: 0.2 });
    expect(stats.days).toHaveLength(30);
    const day = (d: Date) => stats.days.find((x: { date: string }) => x.date === d.toISOString().slice(0, 10));
    expect(day(yesterday)).toEqual({ date: yesterday.toISOString().slice(0, 10), sent: 2, replied: 1, bounced: 0 });
    expect(day(today)).toEqual({ date: today.toISOString().slice(0, 10), sent: 2, replied: 0, bounced: 1 });
    expect(stats.days[29].date).toBe(today.toISOString().slice(0, 10));
    expect(stats.days.reduce((n: number, d: { sent: number }) => n + d.sent, 0)).toBe(4);
  });

  it('reads the days up to the moment it is given', async () => {
    const { campaign, yesterday } = await seed();
    const stats = await campaignStats(db(), campaign.id, { now: yesterday, days: 2 });
    expect(stats.days.map((d) => d.date)).toEqual([new Date(yesterday.getTime() - DAY).toISOString().slice(0, 10), yesterday.toISOString().slice(0, 10)]);
    expect(stats.days[1]).toMatchObject({ sent: 2, replied: 1 });
  });

  it('answers zeros for a new campaign, and 404 / 400 for an unknown or bad id', async () => {
    const tenant = await makeTenant();
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { steps: [{ subject: 'a', body: 'a', delay_hours: 0 }] });
    const fresh = await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}/stats`).expect(200);
    expect(fresh.body.stats.steps).toEqual([{ step: 1, sent: 0, bounced: 0, replied: 0, auto_replied: 0, unsubscribed: 0 }]);
    expect(fresh.body.stats.rates).toEqual({ reply: 0, bounce: 0, complaint: 0 });
    expect((await asAdmin(ctx.api).get('/admin/api/campaigns/2000000000/stats').expect(404)).body).toEqual({ ok: false, error: expect.stringMatching(/campaign/) });
    expect((await asAdmin(ctx.api).get('/admin/api/campaigns/abc/stats').expect(400)).body.ok).toBe(false);
  });
});
