import { db } from '../../apps/core/src/db';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { rotationCandidates } from '../../apps/core/src/outreach/repository/rotation';
import { claimDueSteps } from '../../apps/core/src/outreach/scheduler';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { addProspect, stepMessage } from './support';

/** The rules around a campaign's rotation (docs/campaigns.md), through the admin API and the step writer. */
const ctx = useApi();

const STEPS = [
  { subject: 'Hello {{name}}', body: 'Hi', delay_hours: 0 },
  { subject: 'Hello {{name}}', body: 'Any news?', delay_hours: 1 },
];

async function rotation(count: number, options: { daily_limit?: number } = {}) {
  const account = await makeAccount();
  const boxes = [];
  for (let i = 0; i < count; i++) boxes.push(await makeMailbox(account.id, { daily_limit: options.daily_limit ?? 100, gap_seconds: 0 }));
  const res = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: account.id, name: 'r', goal: 'sales', mailboxes: boxes.map((b) => b.id), status: 'running', steps: STEPS });
  expect(res.status).toBe(201);
  return { account, boxes, campaign: res.body.campaign.id as number };
}

const due = (ids: number[]) => db().prospect.updateMany({ where: { id: { in: ids } }, data: { nextAt: new Date(Date.now() - 1000) } });

it("a campaign naming another account's mailbox is refused (400) and nothing is created or changed", async () => {
  const mine = await makeAccount();
  const other = await makeAccount();
  const own = await makeMailbox(mine.id);
  const theirs = await makeMailbox(other.id);
  const before = await db().campaign.count();
  const res = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: mine.id, name: 'x', goal: 'sales', mailboxes: [own.id, theirs.id], steps: STEPS });
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ ok: false, error: expect.stringContaining(`no mailbox with id ${theirs.id}`) });
  expect(await db().campaign.count()).toBe(before);

  const made = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: mine.id, name: 'x', goal: 'sales', mailboxes: [own.id], steps: STEPS });
  const patch = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${made.body.campaign.id}`).send({ mailboxes: [own.id, theirs.id] });
  expect(patch.status).toBe(400);
  expect((await asAdmin(ctx.api).get(`/admin/api/campaigns/${made.body.campaign.id}`)).body.campaign).toMatchObject({ mailbox: own.id, mailboxes: [own.id] });

  for (const body of [{ mailboxes: [] }, { mailboxes: [own.id, own.id] }, { mailboxes: ['x'] }, { mailbox: theirs.id }]) {
    const refused = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${made.body.campaign.id}`).send(body);
    expect([refused.status, body]).toEqual([400, body]);
  }
  const neither = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: mine.id, name: 'x', goal: 'sales', steps: STEPS });
  expect(neither.status).toBe(400);
  expect(neither.body.error).toMatch(/mailbox or mailboxes/);
});

it('a paused mailbox and one over its bounce rate are passed over for first steps, never failing them; with none left the step waits', async () => {
  const { account, boxes, campaign } = await rotation(3);
  const [a, b, c] = boxes as unknown as [{ id: number }, { id: number }, { id: number }];
  expect((await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${a.id}`).send({ paused: true })).body.mailbox.paused).toBe(true);
  // b: 20 ended outreach emails, 5 of them dead bounces (25% > the campaign's 5%)
  const past = await rotation(1);
  const seed = await addProspect(past.account.id, past.campaign, { email: 'seed@reader.test' });
  for (let i = 0; i < 20; i++) {
    await db().message.create({
      data: {
        id: crypto.randomUUID(), accountId: past.account.id, mailboxId: b.id, kind: 'sequence', to: `x${i}@reader.test`, subject: 's',
        messageIdHeader: `<seed-${i}-${Math.random()}@t>`, status: i < 5 ? 'bounced' : 'sent', bounce: i < 5 ? { dead: true } : undefined,
        prospectId: i === 0 ? seed : undefined, step: i === 0 ? 1 : undefined,
      },
    });
  }
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await addProspect(account.id, campaign, { email: `q${i}@reader.test` }));
  for (const id of ids) expect((await runSequenceStep(db(), id, 1)).kind).toBe('written');
  for (const id of ids) expect((await stepMessage(id, 1))!.mailboxId).toBe(c.id);

  await updateMailbox(db(), c.id, { paused: true });
  const waiting = await addProspect(account.id, campaign, { email: 'late@reader.test' });
  const outcome = await runSequenceStep(db(), waiting, 1);
  expect(outcome).toMatchObject({ kind: 'deferred', why: 'mailboxes' });
  expect(await db().prospect.findUniqueOrThrow({ where: { id: waiting } })).toMatchObject({ status: 'ready', step: 0 });
  // the claim passes paused mailboxes over too (the bounce rate is the step writer's to judge): nothing is claimed
  // while every mailbox is paused
  await updateMailbox(db(), b.id, { paused: true });
  await due([waiting]);
  expect((await claimDueSteps(db(), { campaignId: campaign })).map((d) => d.prospectId)).toEqual([]);
  await updateMailbox(db(), a.id, { paused: false });
  expect((await claimDueSteps(db(), { campaignId: campaign })).map((d) => d.prospectId)).toEqual([waiting]);
  expect((await runSequenceStep(db(), waiting, 1)).kind).toBe('written');
  expect((await stepMessage(waiting, 1))!.mailboxId).toBe(a.id);
});

it('a mailbox taken out of a running campaign gets no new first steps; the prospects it started finish from it, threaded', async () => {
  const { account, boxes, campaign } = await rotation(2);
  const [a, b] = boxes as unknown as [{ id: number }, { id: number }];
  const p1 = await addProspect(account.id, campaign, { email: 'one@reader.test' });
  const p2 = await addProspect(account.id, campaign, { email: 'two@reader.test' });
  await runSequenceStep(db(), p1, 1);
  await runSequenceStep(db(), p2, 1);
  expect([(await stepMessage(p1, 1))!.mailboxId, (await stepMessage(p2, 1))!.mailboxId]).toEqual([a.id, b.id]);

  const changed = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign}`).send({ mailboxes: [a.id] });
  expect(changed.status).toBe(200);
  expect(changed.body.campaign).toMatchObject({ mailbox: a.id, mailboxes: [a.id], retired_mailboxes: [b.id] });

  // p2's follow-up: from b still, in its thread; the claim still finds it
  await due([p1, p2]);
  expect((await claimDueSteps(db(), { campaignId: campaign })).map((d) => d.prospectId).sort()).toEqual([p1, p2].sort());
  await runSequenceStep(db(), p2, 2);
  const second = (await stepMessage(p2, 2))!;
  expect(second.mailboxId).toBe(b.id);
  expect(second.inReplyTo).toBe((await stepMessage(p2, 1))!.messageIdHeader);
  // a new prospect starts from a only
  const p3 = await addProspect(account.id, campaign, { email: 'three@reader.test' });
  await runSequenceStep(db(), p3, 1);
  expect((await stepMessage(p3, 1))!.mailboxId).toBe(a.id);
  // putting b back makes it active again
  const back = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign}`).send({ mailboxes: [b.id, a.id] });
  expect(back.body.campaign).toMatchObject({ mailbox: b.id, mailboxes: [b.id, a.id], retired_mailboxes: [] });
});

it('the one-mailbox form still works: mailbox alone is a rotation of one, and a campaign answers both fields', async () => {
  const account = await makeAccount();
  const m = await makeMailbox(account.id);
  const res = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: account.id, name: 'one', goal: 'sales', mailbox: m.id, steps: STEPS });
  expect(res.status).toBe(201);
  expect(res.body.campaign).toMatchObject({ mailbox: m.id, mailboxes: [m.id] });
  const both = await asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: account.id, name: 'two', goal: 'sales', mailbox: m.id, mailboxes: [m.id], steps: STEPS });
  expect(both.status).toBe(201);
});

it("orders the rotation fewest outreach emails today first, then idle longest: yesterday's count is no count", async () => {
  const { boxes, campaign } = await rotation(3);
  const [a, b, c] = boxes.map((m) => m.id) as [number, number, number];
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const yesterday = new Date(today.getTime() - 86_400_000);
  // A: 5 today, idle longest; B: 1 today, the most recent; C: 9 yesterday and none today, in between
  await db().mailbox.update({ where: { id: a }, data: { sequenceDay: today, sequenceCount: 5, sequenceLastAt: new Date(Date.now() - 3_600_000) } });
  await db().mailbox.update({ where: { id: b }, data: { sequenceDay: today, sequenceCount: 1, sequenceLastAt: new Date(Date.now() - 60_000) } });
  await db().mailbox.update({ where: { id: c }, data: { sequenceDay: yesterday, sequenceCount: 9, sequenceLastAt: new Date(Date.now() - 1_800_000) } });
  const order = await db().$transaction((tx) => rotationCandidates(tx, campaign, null, null, 100));
  expect(order.map((m) => m.id)).toEqual([c, b, a]);
  // with today's counts equal, the one idle longest goes first
  await db().mailbox.update({ where: { id: b }, data: { sequenceCount: 5 } });
  await db().mailbox.update({ where: { id: c }, data: { sequenceDay: today, sequenceCount: 5 } });
  const even = await db().$transaction((tx) => rotationCandidates(tx, campaign, null, null, 100));
  expect(even.map((m) => m.id)).toEqual([a, c, b]);
});
