import { db } from '../../apps/core/src/db';
import { claimMailboxSlot } from '../../apps/core/src/outreach/limits';
import { reportOutcome } from '../../apps/core/src/outreach/outcomes';
import { claimDueSteps } from '../../apps/core/src/outreach/scheduler';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { rewindStepDueNow } from '../../apps/core/src/outreach/repository/prospects';
import { updateCampaign } from '../../apps/core/src/outreach/campaigns';
import { processSequenceStep } from '../../apps/worker/src/processors/sequence';
import { useDelivery } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { addProspect, deliver, fakeJob, outreach, stepMessage } from './support';

/** The step writer and the pre-send guard called directly (no workers): every outcome is observed row by row. */
const worker = useDelivery();
const sink = new SmtpSink();
beforeAll(async () => {
  await sink.start();
});
afterAll(async () => {
  worker.delivery.close();
  await sink.stop();
});

const setup = (options: Omit<Parameters<typeof outreach>[0], 'smtp'> = {}) => outreach({ smtp: sink.url, ...options });

describe('the step writer', () => {
  it('writes step 1 as a sequence Message with placeholders filled, and moves the prospect on', async () => {
    const { tenant, campaign } = await setup({
      steps: [
        { subject: 'Hi {{name}} of {{site}}', body: 'Dear {{name}} <{{email}}>, {{fields.topic}} / {{fields.count}} / [{{fields.missing}}] [{{unknown}}]', delay_hours: 0 },
        { subject: 'Hi {{name}} of {{site}}', body: 'again', delay_hours: 0.5 },
      ],
    });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'ann@ex.org', name: 'Ann', site: 'www.ex.org', fields: { topic: 'cats', count: 3 } });
    const before = Date.now();
    const outcome = await runSequenceStep(db(), id, 1);
    expect(outcome.kind).toBe('written');
    const message = await stepMessage(id, 1);
    expect(message).toMatchObject({
      kind: 'sequence',
      to: 'ann@ex.org',
      mailboxId: tenant.mailbox.id,
      subject: 'Hi Ann of ex.org',
      text: 'Dear Ann <ann@ex.org>, cats / 3 / [] []',
      inReplyTo: null,
      enqueuedAt: expect.any(Date),
    });
    const prospect = await db().prospect.findUniqueOrThrow({ where: { id } });
    expect(prospect).toMatchObject({ status: 'writing', step: 1, threadId: message!.messageIdHeader });
    expect(prospect.nextAt!.getTime() - before).toBeGreaterThanOrEqual(1_800_000 - 1000);
    expect(prospect.nextAt!.getTime() - Date.now()).toBeLessThanOrEqual(1_800_000);
  });

  it('threads follow-ups under the first email: Re: subject unless the step has its own', async () => {
    const { tenant, campaign } = await setup({
      steps: [
        { subject: 'Idea for {{site}}', body: 'one', delay_hours: 0 },
        { subject: 'Idea for {{site}}', body: 'two', delay_hours: 0 },
        { subject: 'A different angle', body: 'three', delay_hours: 0 },
      ],
    });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'bo@ex.org', site: 'ex.org' });
    for (const step of [1, 2, 3]) expect((await runSequenceStep(db(), id, step)).kind).toBe('written');
    const [first, second, third] = await Promise.all([1, 2, 3].map((s) => stepMessage(id, s)));
    expect(second).toMatchObject({ subject: 'Re: Idea for ex.org', inReplyTo: first!.messageIdHeader, references: first!.messageIdHeader });
    expect(third).toMatchObject({ subject: 'A different angle', inReplyTo: first!.messageIdHeader, references: first!.messageIdHeader });
  });

  it('closes the prospect as lost/no_reply once the wait after the last step is over', async () => {
    const { tenant, campaign } = await setup({ steps: [{ subject: 's', body: 'b', delay_hours: 0 }] });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'quiet@ex.org' });
    await runSequenceStep(db(), id, 1);
    // a one-email campaign with delay 0 waits the fallback of 72 hours
    const waiting = await db().prospect.findUniqueOrThrow({ where: { id } });
    expect(waiting.nextAt!.getTime() - Date.now()).toBeGreaterThan(71 * 3_600_000);
    expect(await runSequenceStep(db(), id, 2)).toMatchObject({ kind: 'deferred', why: 'not_due' });
    await db().prospect.update({ where: { id }, data: { nextAt: new Date(Date.now() - 1000) } });
    expect(await runSequenceStep(db(), id, 2)).toEqual({ kind: 'closed' });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'lost', reason: 'no_reply', nextAt: null, closedAt: expect.any(Date) });
    expect(await db().message.count({ where: { prospectId: id } })).toBe(1);
  });

  it('runs the same job twice: one Message, one email', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'twice@ex.org' });
    const job = fakeJob<'sequence'>({ prospectId: id, step: 1 });
    expect((await processSequenceStep(db(), job)).kind).toBe('written');
    expect(await processSequenceStep(db(), job)).toMatchObject({ kind: 'skipped' });
    const message = (await stepMessage(id, 1))!;
    expect(await db().message.count({ where: { prospectId: id } })).toBe(1);
    expect((await deliver(worker.delivery, message.id)).kind).toBe('sent');
    expect((await deliver(worker.delivery, message.id)).kind).toBe('finished');
    expect(sink.to('twice@ex.org')).toHaveLength(1);
  });

  it('lets only one of two concurrent writers write a step', async () => {
    const { tenant, campaign } = await setup();
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => addProspect(tenant.account.id, campaign.id, { email: `race${i}@ex.org` })));
    const outcomes = await Promise.all(ids.flatMap((id) => [runSequenceStep(db(), id, 1), runSequenceStep(db(), id, 1), runSequenceStep(db(), id, 1)]));
    expect(outcomes.filter((o) => o.kind === 'written')).toHaveLength(5);
    expect(await db().message.count({ where: { prospectId: { in: ids } } })).toBe(5);
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
    expect(mailbox.sequenceCount).toBe(5);
  });

  it('writes nothing for a prospect that is not due, a paused campaign, or a step out of turn', async () => {
    const { tenant, campaign } = await setup({ steps: [{ subject: 's', body: 'b', delay_hours: 1 }] });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'wait@ex.org' });
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'deferred', why: 'not_due' });
    await db().prospect.update({ where: { id }, data: { nextAt: new Date() } });
    expect(await runSequenceStep(db(), id, 2)).toMatchObject({ kind: 'skipped' });
    await db().$transaction((tx) => updateCampaign(tx, campaign.id, { status: 'paused' }));
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'skipped', why: 'campaign is paused' });
    expect(await db().message.count({ where: { prospectId: id } })).toBe(0);
  });

  it('closes a stop-listed prospect instead of writing to it', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'later-stopped@ex.org' });
    await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'ex.org', kind: 'domain' } });
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'skipped' });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'lost', reason: 'stopped' });
    expect(await db().message.count({ where: { prospectId: id } })).toBe(0);
  });

  it('closes a prospect whose address bounced or complained before, instead of writing to it', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'bounced@ex.org' });
    await db().suppression.create({ data: { accountId: tenant.account.id, email: 'bounced@ex.org', reason: 'bounced' } });
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'skipped' });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'lost', reason: 'bounced' });
    expect(await db().message.count({ where: { prospectId: id } })).toBe(0);
  });
  it('writes a step again over its copy cancelled by a pause (never sent), and leaves a sent copy of another step alone', async () => {
    const { tenant, campaign } = await setup({ steps: [{ subject: 'One', body: 'first', delay_hours: 0 }, { subject: 'Two', body: 'second', delay_hours: 0 }] });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'paused@ex.org' });
    await runSequenceStep(db(), id, 1);
    const first = (await stepMessage(id, 1))!;
    await db().prospect.update({ where: { id }, data: { nextAt: new Date() } });
    await runSequenceStep(db(), id, 2);
    const cancelled = (await stepMessage(id, 2))!;
    // as a pause leaves it: step 2's copy cancelled, the prospect back before step 2 and due again
    await db().message.update({ where: { id: cancelled.id }, data: { status: 'cancelled' } });
    await db().$transaction((tx) => rewindStepDueNow(tx, id));
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ step: 1, node: '2', status: 'writing' });
    expect(await runSequenceStep(db(), id, 2)).toMatchObject({ kind: 'written' });
    const rewritten = (await stepMessage(id, 2))!;
    expect(rewritten.id).not.toBe(cancelled.id);
    expect(rewritten).toMatchObject({ status: 'queued', subject: 'Two', text: 'second' });
    expect(await db().message.findUnique({ where: { id: cancelled.id } })).toBeNull();
    expect(await db().message.findUnique({ where: { id: first.id } })).not.toBeNull();
  });
});

describe('the pre-send guard', () => {
  it('does not send a step when a reply was recorded after it was written and before it went out', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'replied-first@ex.org' });
    await runSequenceStep(db(), id, 1);
    await db().prospect.update({ where: { id }, data: { nextAt: new Date() } });
    await runSequenceStep(db(), id, 2);
    const first = (await stepMessage(id, 1))!;
    expect((await deliver(worker.delivery, first.id)).kind).toBe('sent');
    await reportOutcome(db(), tenant.account.id, { campaign: campaign.id, email: 'replied-first@ex.org', state: 'replied' });
    const second = (await stepMessage(id, 2))!;
    expect(await deliver(worker.delivery, second.id)).toEqual({ kind: 'cancelled', reason: 'the prospect is replied' });
    expect(await db().message.findUniqueOrThrow({ where: { id: second.id } })).toMatchObject({ status: 'cancelled', sentAt: null });
    expect(sink.to('replied-first@ex.org')).toHaveLength(1);
  });

  it('does not send to an address stopped from another campaign meanwhile', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'two-campaigns@ex.org' });
    const { makeCampaign } = await import('../helpers/factories');
    const other = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    await addProspect(tenant.account.id, other.id, { email: 'two-campaigns@ex.org' });
    await runSequenceStep(db(), id, 1);
    await reportOutcome(db(), tenant.account.id, { campaign: other.id, email: 'two-campaigns@ex.org', state: 'stop' });
    const message = (await stepMessage(id, 1))!;
    expect((await deliver(worker.delivery, message.id)).kind).toBe('cancelled');
    expect(sink.to('two-campaigns@ex.org')).toHaveLength(0);
  });

  it('does not send a step when an out-of-office came in after it was written: the prospect goes back one step, for the step to go out on resuming', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'away@ex.org' });
    await runSequenceStep(db(), id, 1);
    const first = (await stepMessage(id, 1))!;
    expect((await deliver(worker.delivery, first.id)).kind).toBe('sent');
    await db().prospect.update({ where: { id }, data: { nextAt: new Date() } });
    await runSequenceStep(db(), id, 2);
    const before = await db().prospect.findUniqueOrThrow({ where: { id } });
    expect(before).toMatchObject({ step: 2, status: 'writing' });
    // as the reader leaves a prospect whose out-of-office came in: later, due when the person is back
    const back = new Date(Date.now() + 86_400_000);
    await db().prospect.update({ where: { id }, data: { status: 'later', nextAt: back } });
    const second = (await stepMessage(id, 2))!;
    expect(await deliver(worker.delivery, second.id)).toEqual({ kind: 'cancelled', reason: 'the prospect is later' });
    // back one step, its place the step taken back; step 1's thread and mailbox kept, its status and return date untouched
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({
      step: 1, node: second.stepKey, status: 'later', nextAt: back, threadId: before.threadId, mailboxId: before.mailboxId,
    });
    expect(sink.to('away@ex.org')).toHaveLength(1);
  });

  it('holds a step back when the campaign was paused, and sends it after resuming: never skipped', async () => {
    const { tenant, campaign } = await setup();
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'paused@ex.org', name: 'Pat' });
    await runSequenceStep(db(), id, 1);
    await db().$transaction((tx) => updateCampaign(tx, campaign.id, { status: 'paused' }));
    const held = (await stepMessage(id, 1))!;
    expect(await deliver(worker.delivery, held.id)).toEqual({ kind: 'cancelled', reason: 'the campaign is paused' });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'ready', step: 0, threadId: null });
    expect(await claimDueSteps(db(), { campaignId: campaign.id })).toEqual([]);

    await db().$transaction((tx) => updateCampaign(tx, campaign.id, { status: 'running' }));
    const due = await claimDueSteps(db(), { campaignId: campaign.id });
    expect(due).toEqual([{ prospectId: id, step: 1, nextAt: expect.any(Date) }]);
    expect((await runSequenceStep(db(), id, 1)).kind).toBe('written');
    const rewritten = (await stepMessage(id, 1))!;
    expect(rewritten.id).not.toBe(held.id);
    expect((await deliver(worker.delivery, rewritten.id)).kind).toBe('sent');
    expect(sink.to('paused@ex.org').map((m) => m.parsed.subject)).toEqual(['Hello Pat']);
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).threadId).toBe(rewritten.messageIdHeader);
  });
});

describe('the scheduler', () => {
  it('claims only due prospects of running campaigns, and two schedulers never claim the same one', async () => {
    const { tenant, campaign } = await setup({ mailbox: { daily_limit: 100, gap_seconds: 0 }, steps: [{ subject: 's', body: 'b', delay_hours: 0 }] });
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => addProspect(tenant.account.id, campaign.id, { email: `due${i}@ex.org` })));
    const later = await addProspect(tenant.account.id, campaign.id, { email: 'later@ex.org' });
    await db().prospect.update({ where: { id: later }, data: { nextAt: new Date(Date.now() + 60_000) } });
    const draft = await outreach({ smtp: sink.url, status: 'paused' });
    await addProspect(draft.tenant.account.id, draft.campaign.id, { email: 'draft@ex.org' });

    let meanwhile: number[] = [];
    const claimed = await claimDueSteps(db(), { limit: 1000 }, async () => {
      // a second scheduler while the first still holds its claim (it is queueing the jobs)
      meanwhile = (await claimDueSteps(db(), { limit: 1000 })).map((d) => d.prospectId);
    });
    const first = claimed.map((d) => d.prospectId);
    expect(first).toEqual(expect.arrayContaining(ids));
    expect(first).not.toContain(later);
    expect(meanwhile.filter((id) => first.includes(id))).toEqual([]);
    // claimed rows are marked queued: the next tick passes them over while their jobs wait for a worker
    expect(await claimDueSteps(db(), { campaignId: campaign.id, limit: 1000 })).toEqual([]);
    // the rows are still due (next_at is the truth): once the mark is stale (a job Redis lost), they are claimed again
    await db().prospect.updateMany({ where: { campaignId: campaign.id }, data: { queuedAt: new Date(Date.now() - 120_000) } });
    const again = (await claimDueSteps(db(), { campaignId: campaign.id, limit: 1000 })).map((d) => d.prospectId).sort((x, y) => x - y);
    expect(again).toEqual([...ids].sort((x, y) => x - y));
  });
});

describe('mailbox limits', () => {
  it('allows at most daily_limit sequence emails a day, then waits for the next UTC day', async () => {
    const { tenant, campaign } = await setup({ mailbox: { daily_limit: 2, gap_seconds: 0 }, steps: [{ subject: 's', body: 'b', delay_hours: 0 }] });
    const ids = await Promise.all(['c1', 'c2', 'c3'].map((n) => addProspect(tenant.account.id, campaign.id, { email: `${n}@ex.org` })));
    const outcomes = [];
    for (const id of ids) outcomes.push(await runSequenceStep(db(), id, 1));
    expect(outcomes.map((o) => o.kind)).toEqual(['written', 'written', 'deferred']);
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    expect(outcomes[2]).toEqual({ kind: 'deferred', why: 'daily_limit', until: tomorrow });
    expect((await db().prospect.findUniqueOrThrow({ where: { id: ids[2] } })).nextAt).toEqual(tomorrow);
    // a new day starts a new count
    await db().mailbox.update({ where: { id: tenant.mailbox.id }, data: { sequenceDay: new Date(Date.now() - 86_400_000) } });
    expect(await db().$transaction((tx) => claimMailboxSlot(tx, tenant.mailbox.id))).toEqual({ claimed: true, at: expect.any(Date) });
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).sequenceCount).toBe(1);
  });

  it('keeps gap_seconds between two emails of one mailbox', async () => {
    const { tenant, campaign } = await setup({ mailbox: { daily_limit: 100, gap_seconds: 30 }, steps: [{ subject: 's', body: 'b', delay_hours: 0 }] });
    const [a, b] = await Promise.all(['g1', 'g2'].map((n) => addProspect(tenant.account.id, campaign.id, { email: `${n}@ex.org` })));
    const [first, second] = await Promise.all([runSequenceStep(db(), a!, 1), runSequenceStep(db(), b!, 1)]);
    const kinds = [first.kind, second.kind].sort();
    expect(kinds).toEqual(['deferred', 'written']);
    const deferred = (first.kind === 'deferred' ? first : second) as { until: Date; why: string };
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
    expect(deferred.why).toBe('gap');
    // the wait drawn after the first email (gap_jitter 0.3 by default): from 30 to 39 seconds
    expect(mailbox.sequenceGap).toBeGreaterThanOrEqual(30);
    expect(mailbox.sequenceGap).toBeLessThanOrEqual(39);
    expect(Math.abs(deferred.until.getTime() - (mailbox.sequenceLastAt!.getTime() + mailbox.sequenceGap! * 1000))).toBeLessThanOrEqual(1);
    expect(mailbox.sequenceCount).toBe(1);
  });

  it('gives the slot back when the step rolls back', async () => {
    const { tenant } = await setup({ mailbox: { daily_limit: 1, gap_seconds: 0 } });
    await db()
      .$transaction(async (tx) => {
        expect(await claimMailboxSlot(tx, tenant.mailbox.id)).toEqual({ claimed: true, at: expect.any(Date) });
        throw new Error('worker died mid-step');
      })
      .catch(() => undefined);
    expect(await db().$transaction((tx) => claimMailboxSlot(tx, tenant.mailbox.id))).toEqual({ claimed: true, at: expect.any(Date) });
  });
});
