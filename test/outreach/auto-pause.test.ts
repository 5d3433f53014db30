import { db } from '../../apps/core/src/db';
import { classify } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { markRowsSent } from '../../apps/core/src/delivery/repository';
import { autoPauseAfter, judgeWatchedWindows, pauseReason } from '../../apps/core/src/outreach/auto-pause';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { asAdmin, useApi } from '../helpers/api';
import { makeList, wantEvents } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { addProspect, deliver, outreach } from './support';

/** Auto-pause on dead-address bounces and complaints (docs/outreach.md). */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ delivery: worker });

beforeAll(() => {
  sink.rule = (stage, address) => (stage === 'rcpt' && address.startsWith('dead') ? { code: 550, message: '5.1.1 no such user here' } : undefined);
});

let seeded = 0;

/** `count` outreach emails of the campaign that went out well, written straight into the tables. */
async function seedSent(campaignId: number, count: number): Promise<string[]> {
  const campaign = await db().campaign.findUniqueOrThrow({ where: { id: campaignId } });
  const rows = await db().$queryRaw<{ id: string }[]>`
    WITH p AS (
      INSERT INTO prospects (campaign_id, email, status, step, updated_at)
      SELECT ${campaignId}, 'seed' || i || '-' || ${`${campaignId}-${seeded++}`} || '@ex.org', 'writing', 1, now() FROM generate_series(1, ${count}) AS i
      RETURNING id, email)
    INSERT INTO messages (id, account_id, mailbox_id, kind, prospect_id, step, "to", subject, message_id_header, status, sent_at, updated_at)
    SELECT gen_random_uuid(), ${campaign.accountId}, ${campaign.mailboxId}, 'sequence', p.id, 1, p.email, 's', '<' || gen_random_uuid() || '@ex.org>', 'sent', now(), now() FROM p
    RETURNING id::text`;
  return rows.map((r) => r.id);
}

/** Writes and delivers step 1 to a new prospect (`dead...` addresses get a 550 at RCPT). */
async function sendTo(accountId: number, campaignId: number, email: string) {
  const id = await addProspect(accountId, campaignId, { email });
  const written = await runSequenceStep(db(), id, 1);
  if (written.kind !== 'written') throw new Error(`not written: ${JSON.stringify(written)}`);
  return deliver(worker.delivery, written.messageId);
}

const campaignRow = (id: number) => db().campaign.findUniqueOrThrow({ where: { id } });

describe('auto-pause of campaigns', () => {
  it('pauses when dead-address bounces over the last emails pass bounce_rate, with paused_reason and campaign.paused', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await wantEvents(tenant.account.id, ['campaign.paused']);
    await seedSent(campaign.id, 19);
    // 1 of 20: 5.0%, not past 5%
    expect(await sendTo(tenant.account.id, campaign.id, 'dead1@ex.org')).toMatchObject({ kind: 'rejected', status: 'bounced' });
    expect((await campaignRow(campaign.id)).status).toBe('running');
    // 2 of 21: 9.5%
    await sendTo(tenant.account.id, campaign.id, 'dead2@ex.org');
    const paused = await campaignRow(campaign.id);
    expect(paused).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 9.5% over the last 21 emails' });
    const shown = await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}`).expect(200);
    expect(shown.body.campaign).toMatchObject({ status: 'paused', paused_reason: 'bounce rate 9.5% over the last 21 emails' });
    const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'campaign.paused' } });
    expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ campaign: campaign.id, reason: 'bounce rate 9.5% over the last 21 emails', ended: 21, bounced: 2 })]);

    // resuming clears the reason and starts a new window: one more bounce alone is under the 20-email minimum
    const resumed = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'running' }).expect(200);
    expect(resumed.body.campaign.paused_reason).toBeNull();
    await sendTo(tenant.account.id, campaign.id, 'dead3@ex.org');
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'running', pausedReason: null });
  });

  it('needs at least 20 ended emails, and counts only the last `window` of them', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await seedSent(campaign.id, 5);
    await sendTo(tenant.account.id, campaign.id, 'dead-a@ex.org');
    expect((await campaignRow(campaign.id)).status).toBe('running'); // 1 of 6: too few to judge

    // a window of 20: the old bounce falls out of it once 20 good emails came after it (each window on the way held
    // 1 of 20, 5% <= 6%)
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: { window: 20, bounce_rate: 0.06 } }).expect(200);
    await seedSent(campaign.id, 20);
    await sendTo(tenant.account.id, campaign.id, 'dead-c@ex.org'); // 1 of the last 20 (5%) <= 6%
    expect((await campaignRow(campaign.id)).status).toBe('running');
    await sendTo(tenant.account.id, campaign.id, 'dead-d@ex.org'); // 2 of the last 20 (10%)
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 10.0% over the last 20 emails' });
  });

  it('judges the window again as it fills when the bounces came first: paused once 20 emails ended, 2 of them dead', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await wantEvents(tenant.account.id, ['campaign.paused']);
    // RCPT-time refusals come first: 2 of 2, too few to judge, so the window is watched
    await sendTo(tenant.account.id, campaign.id, 'dead-first1@ex.org');
    await sendTo(tenant.account.id, campaign.id, 'dead-first2@ex.org');
    expect(await db().pauseWatch.count({ where: { campaignId: campaign.id } })).toBe(1);
    for (let i = 1; i <= 17; i++) {
      expect(await sendTo(tenant.account.id, campaign.id, `good${i}@ex.org`)).toMatchObject({ kind: 'sent' });
    }
    expect((await campaignRow(campaign.id)).status).toBe('running'); // 2 of 19: still too few
    // the 20th email ends well, and the window is judged: 2 of 20
    await sendTo(tenant.account.id, campaign.id, 'good18@ex.org');
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 10.0% over the last 20 emails' });
    expect(await db().event.count({ where: { accountId: tenant.account.id, type: 'campaign.paused' } })).toBe(1);
    expect(await db().pauseWatch.count({ where: { campaignId: campaign.id } })).toBe(0);
  });

  it('judges every window the emails pass through when several end together: 4 dead first, then 20 marked sent at once', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: { bounce_rate: 0.05, window: 20 } }).expect(200);
    for (let i = 1; i <= 4; i++) await sendTo(tenant.account.id, campaign.id, `dead-early${i}@ex.org`);
    expect(await db().pauseWatch.count({ where: { campaignId: campaign.id } })).toBe(1);
    // 20 emails on the wire end in one "sent" statement, as the worker's group commit marks them: the last 20 hold no
    // bounce, but the window of the 20th ended email held 4 dead of 20
    const onWire = await seedSent(campaign.id, 20);
    await db().$executeRaw`UPDATE messages SET status = 'sending' WHERE id = ANY(${onWire}::uuid[])`;
    const watched = await markRowsSent(db(), onWire.map((id) => ({ id, response: '250 ok' })));
    expect(watched).toEqual([{ campaign_id: campaign.id, broadcast_id: null }]);
    await judgeWatchedWindows(db(), watched);
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 20.0% over the last 20 emails' });
  });

  it('pauses a campaign of 24 whose 4 dead addresses come first, however its deliveries batch', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: { bounce_rate: 0.05, window: 20 } }).expect(200);
    const written: string[] = [];
    for (const email of [...[1, 2, 3, 4].map((i) => `dead-lot${i}@ex.org`), ...Array.from({ length: 20 }, (_, i) => `lot${i}@ex.org`)]) {
      const step = await runSequenceStep(db(), await addProspect(tenant.account.id, campaign.id, { email }), 1);
      if (step.kind !== 'written') throw new Error(`not written: ${JSON.stringify(step)}`);
      written.push(step.messageId);
    }
    for (const id of written.slice(0, 4)) await deliver(worker.delivery, id);
    await Promise.all(written.slice(4).map((id) => deliver(worker.delivery, id)));
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'paused', pausedReason: expect.stringMatching(/^bounce rate \d+\.\d% over the last 20 emails$/) });
  });

  it('stops watching a window that reaches 20 emails under the rate, and keeps running', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await sendTo(tenant.account.id, campaign.id, 'dead-once@ex.org');
    expect(await db().pauseWatch.count({ where: { campaignId: campaign.id } })).toBe(1);
    for (let i = 1; i <= 19; i++) await sendTo(tenant.account.id, campaign.id, `fine${i}@ex.org`);
    // 1 of 20: 5.0%, not past 5%; from now on good emails only dilute it
    expect((await campaignRow(campaign.id)).status).toBe('running');
    expect(await db().pauseWatch.count({ where: { campaignId: campaign.id } })).toBe(0);
  });

  it('never pauses with pause_on null, or with a rate set to null', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: { bounce_rate: null } }).expect(200);
    await seedSent(campaign.id, 20);
    await sendTo(tenant.account.id, campaign.id, 'dead-x@ex.org');
    await sendTo(tenant.account.id, campaign.id, 'dead-y@ex.org');
    expect((await campaignRow(campaign.id)).status).toBe('running');
    const off = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: null }).expect(200);
    expect(off.body.campaign.pause_on).toBeNull();
    await sendTo(tenant.account.id, campaign.id, 'dead-z@ex.org');
    expect((await campaignRow(campaign.id)).status).toBe('running');
  });

  it('pauses on complaints past complaint_rate (an ARF report matched to one of its emails)', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url });
    const [first] = await seedSent(campaign.id, 40);
    const message = await db().message.findUniqueOrThrow({ where: { id: first! } });
    const arf = [
      'From: abuse@isp.example',
      `To: ${tenant.mailbox.address}`,
      'Subject: Complaint',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=feedback-report; boundary="F"',
      '',
      '--F',
      'Content-Type: text/plain',
      '',
      'This is an email abuse report.',
      '--F',
      'Content-Type: message/feedback-report',
      '',
      'Feedback-Type: abuse',
      'Version: 1',
      `Original-Rcpt-To: <${message.to}>`,
      '',
      '--F',
      'Content-Type: message/rfc822',
      '',
      `From: ${tenant.mailbox.address}`,
      `To: ${message.to}`,
      'Subject: s',
      `Message-ID: ${message.messageIdHeader}`,
      '',
      'Hi',
      '--F--',
      '',
    ].join('\r\n');
    await handleInbound(db(), { mailbox: await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } }), uidValidity: 1n, uid: 1n }, await classify(arf));
    expect(await campaignRow(campaign.id)).toMatchObject({ status: 'paused', pausedReason: 'complaint rate 2.5% over the last 40 emails' });
  });

  it.each([
    [{ bounce_rate: 1.5 }, /bounce_rate/],
    [{ complaint_rate: -0.1 }, /complaint_rate/],
    [{ window: 5 }, /window/],
  ])('refuses pause_on %j with 400 naming the field, storing nothing', async (pauseOn, words) => {
    const { campaign } = await outreach({ smtp: sink.url });
    const refused = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ pause_on: pauseOn }).expect(400);
    expect(refused.body).toEqual({ ok: false, error: expect.stringMatching(words) });
    expect((await campaignRow(campaign.id)).pauseOn).toEqual({ bounce_rate: 0.05, complaint_rate: 0.003, window: 100 });
  });
});

describe('auto-pause of broadcasts', () => {
  it('pauses a sending broadcast whose copies bounce past 5%, with paused_reason and broadcast.paused; a resume clears it', async () => {
    const { tenant } = await outreach({ smtp: sink.url });
    await wantEvents(tenant.account.id, ['broadcast.paused']);
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const broadcast = await db().broadcast.create({ data: { accountId: tenant.account.id, listId: list.id, subject: 'News', text: 'x', status: 'sending', startedAt: new Date() } });
    const ids = await db().$queryRaw<{ id: string }[]>`
      INSERT INTO messages (id, account_id, mailbox_id, kind, broadcast_id, "to", subject, message_id_header, status, smtp_response, updated_at)
      SELECT gen_random_uuid(), ${tenant.account.id}, ${tenant.mailbox.id}, 'broadcast', ${broadcast.id}, 'r' || i || '@ex.org', 'News', '<' || gen_random_uuid() || '@ex.org>',
        (CASE WHEN i <= 3 THEN 'bounced' ELSE 'sent' END)::"MessageStatus", CASE WHEN i <= 3 THEN '550 5.1.1 unknown' END, now()
      FROM generate_series(1, 40) AS i
      RETURNING id::text`;
    expect(await db().$transaction((tx) => autoPauseAfter(tx, ids[0]!.id))).toBe('bounce rate 7.5% over the last 40 emails');
    const shown = await asAdmin(ctx.api).get(`/admin/api/broadcasts/${broadcast.id}`).expect(200);
    expect(shown.body.broadcast).toMatchObject({ status: 'paused', paused_reason: 'bounce rate 7.5% over the last 40 emails' });
    expect(await db().event.count({ where: { accountId: tenant.account.id, type: 'broadcast.paused' } })).toBe(1);
    const resumed = await asAdmin(ctx.api).patch(`/admin/api/broadcasts/${broadcast.id}`).send({ status: 'sending' }).expect(200);
    expect(resumed.body.broadcast.paused_reason).toBeNull();
  });
});

describe('auto-pause of broadcasts, bounces first', () => {
  it('pauses a sending broadcast when the copies that end well after its early bounces bring the window to 20', async () => {
    const { tenant } = await outreach({ smtp: sink.url });
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const broadcast = await db().broadcast.create({ data: { accountId: tenant.account.id, listId: list.id, subject: 'News', text: 'x', status: 'sending', startedAt: new Date() } });
    const copies = (status: string, from: number, count: number) => db().$queryRaw<{ id: string }[]>`
      INSERT INTO messages (id, account_id, mailbox_id, kind, broadcast_id, "to", subject, message_id_header, status, smtp_response, updated_at)
      SELECT gen_random_uuid(), ${tenant.account.id}, ${tenant.mailbox.id}, 'broadcast', ${broadcast.id}, 'c' || i || '@ex.org', 'News', '<' || gen_random_uuid() || '@ex.org>',
        ${status}::"MessageStatus", CASE WHEN ${status} = 'bounced' THEN '550 5.1.1 unknown' END, now()
      FROM generate_series(${from}::int, ${from + count - 1}::int) AS i
      RETURNING id::text`;
    const [bounced] = await copies('bounced', 1, 2);
    expect(await db().$transaction((tx) => autoPauseAfter(tx, bounced!.id))).toBeNull(); // 2 of 2: too few
    // 18 copies on the wire, marked sent by the worker's "sent" statement: 2 of 20
    const sending = await copies('sending', 3, 18);
    await Promise.all(sending.slice(0, 17).map((c) => worker.delivery.claims.markSent({ id: c.id, kind: 'broadcast' }, '250 ok')));
    expect((await db().broadcast.findUniqueOrThrow({ where: { id: broadcast.id } })).status).toBe('sending');
    await worker.delivery.claims.markSent({ id: sending[17]!.id, kind: 'broadcast' }, '250 ok');
    expect(await db().broadcast.findUniqueOrThrow({ where: { id: broadcast.id } })).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 10.0% over the last 20 emails' });
  });
});

describe('the rule', () => {
  it('passes a rate only above it, and only from 20 ended emails', () => {
    const rates = { bounce_rate: 0.05, complaint_rate: 0.003, window: 100 };
    expect(pauseReason({ ended: 19, dead: 19, complained: 0 }, rates)).toBeNull();
    expect(pauseReason({ ended: 100, dead: 5, complained: 0 }, rates)).toBeNull();
    expect(pauseReason({ ended: 100, dead: 7, complained: 0 }, rates)).toBe('bounce rate 7.0% over the last 100 emails');
    expect(pauseReason({ ended: 1000, dead: 0, complained: 4 }, rates)).toBe('complaint rate 0.4% over the last 1000 emails');
    // exactly at the rate is not past it; a rate set to null never pauses
    expect(pauseReason({ ended: 1000, dead: 0, complained: 3 }, rates)).toBeNull();
    expect(pauseReason({ ended: 100, dead: 0, complained: 50 }, { ...rates, complaint_rate: null })).toBeNull();
  });
});
