import { db } from '../../apps/core/src/db';
import { campaignWindows, pauseRunningCampaign } from '../../apps/core/src/outreach/repository/windows';
import { makeAccount, makeCampaign, makeMailbox } from '../helpers/factories';

/**
 * The windows an auto-pause judgement reads (outreach/repository/windows.ts), read straight from crafted rows: which
 * window has the most dead bounces when they came first, and what a campaign with no ended email gives.
 */
async function campaignWith(status: 'draft' | 'running' = 'running') {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const campaign = await makeCampaign(account.id, mailbox.id, { status });
  return { account, mailbox, campaign };
}

/** `count` ended sequence emails of the campaign, in order a second apart; the first `dead` of them dead bounces. */
async function endedEmails(f: Awaited<ReturnType<typeof campaignWith>>, count: number, dead: number) {
  const prospect = await db().prospect.create({ data: { campaignId: f.campaign.id, email: `p-${f.campaign.id}@example.org`, status: 'writing', step: 1 } });
  await db().$executeRaw`
    INSERT INTO messages (id, account_id, mailbox_id, kind, prospect_id, "to", subject, message_id_header, status, bounce, updated_at)
    SELECT gen_random_uuid(), ${f.account.id}, ${f.mailbox.id}, 'sequence', ${prospect.id}, 'to-' || i || '@example.org', 'Hi',
      '<w-' || ${f.campaign.id} || '-' || i || '@example.org>', (CASE WHEN i <= ${dead} THEN 'bounced' ELSE 'sent' END)::"MessageStatus",
      CASE WHEN i <= ${dead} THEN '{"dead": true}'::jsonb END, now() - interval '1 hour' + i * interval '1 second'
    FROM generate_series(1, ${count}) AS i`;
}

describe('the auto-pause windows', () => {
  it('4 dead bounces first, then 20 delivered: the latest window is clean, the first holds the 4', async () => {
    const f = await campaignWith();
    await endedEmails(f, 24, 4);
    const windows = await campaignWindows(db(), f.campaign.id, null, 20, 20);
    expect(windows.latest).toEqual({ ended: 20, dead: 0, complained: 0 });
    expect(windows.mostDead).toEqual({ ended: 20, dead: 4, complained: 0 });
    expect(windows.mostComplained).toMatchObject({ ended: 20, complained: 0 });
  });

  it('a campaign with no ended email: the latest window empty, none to judge', async () => {
    const f = await campaignWith();
    expect(await campaignWindows(db(), f.campaign.id, null, 100, 20)).toEqual({ latest: { ended: 0, dead: 0, complained: 0 }, mostDead: null, mostComplained: null });
  });

  it('pauses a running campaign once; a campaign not running is not paused', async () => {
    const running = await campaignWith('running');
    expect(await pauseRunningCampaign(db(), running.campaign.id, 'bounce rate 20.0% over the last 20 emails')).toBe(true);
    expect(await pauseRunningCampaign(db(), running.campaign.id, 'again')).toBe(false);
    expect(await db().campaign.findUniqueOrThrow({ where: { id: running.campaign.id } })).toMatchObject({ status: 'paused', pausedReason: 'bounce rate 20.0% over the last 20 emails' });
    const draft = await campaignWith('draft');
    expect(await pauseRunningCampaign(db(), draft.campaign.id, 'no')).toBe(false);
  });
});
