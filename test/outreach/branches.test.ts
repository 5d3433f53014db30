import { db } from '../../apps/core/src/db';
import { classify } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { updateCampaign, type StepInput } from '../../apps/core/src/outreach/campaigns';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { conditionFacts } from '../../apps/core/src/outreach/repository/paths';
import request from 'supertest';
import { ADMIN_TOKEN, asAdmin, useApi } from '../helpers/api';
import { useDelivery } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { addProspect, deliver, outreach, stepMessage } from './support';

/**
 * Sequences with branches (docs/outreach.md): each prospect takes the branch its answers decide, the answers
 * coming in through the inbound path (handleInbound on the classified email, as the IMAP reader calls it).
 */
const ctx = useApi();
const worker = useDelivery();
const sink = new SmtpSink();
beforeAll(async () => {
  await sink.start();
});
afterAll(async () => {
  worker.delivery.close();
  await sink.stop();
});

const HOUR = 3_600_000;
let uid = 0;

/** An answer to our message, as it would be read from the mailbox's INBOX. */
async function answer(mailboxId: number, messageId: string, kind: 'reply' | 'auto' | 'ooo') {
  const back = new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10);
  const raw = [
    'From: Prospect <p@ex.org>',
    'To: seller@example.test',
    `Subject: ${kind === 'ooo' ? 'Out of Office: Hello' : kind === 'auto' ? 'Automatic reply: Hello' : 'Re: Hello'}`,
    `Message-ID: <answer-${++uid}-${Date.now()}@ex.org>`,
    `In-Reply-To: ${messageId}`,
    `References: ${messageId}`,
    ...(kind === 'reply' ? [] : ['Auto-Submitted: auto-replied']),
    `Date: ${new Date().toUTCString()}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    kind === 'ooo' ? `I am out of the office and back on ${back}.` : kind === 'auto' ? 'Thanks, we got your email and will answer soon.' : 'Sounds good, tell me more.',
    '',
  ].join('\r\n');
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } });
  return handleInbound(db(), { mailbox, uidValidity: 1n, uid: BigInt(uid) }, await classify(raw));
}

const prospect = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });
/** Its time is now; `waited`: the hours since it came to its step (a condition's within_hours) have passed. */
const dueNow = (id: number, waited = 0) =>
  db().prospect.update({ where: { id }, data: { nextAt: new Date(Date.now() - 1000), ...(waited ? { nodeSince: new Date(Date.now() - waited * HOUR) } : {}) } });

const branched: StepInput[] = [
  { id: 'intro', subject: 'Hello {{name}}', body: 'First', delay_hours: 0 },
  { id: 'check', type: 'condition', if: 'out_of_office', within_hours: 48, then: 'welcome-back', else: 'auto-check' },
  { id: 'auto-check', type: 'condition', if: 'auto_replied', within_hours: 0, then: 'after-auto', else: 'silence' },
  { id: 'welcome-back', subject: 'Welcome back', body: 'Back from holidays?', delay_hours: 0 },
  { id: 'after-auto', subject: 'Hello again', body: 'Saw your auto-reply', delay_hours: 0 },
  { id: 'silence', subject: 'Hello again', body: 'Nothing yet?', delay_hours: 0, next: 'last' },
  { id: 'last', subject: 'Last', body: 'Closing the loop', delay_hours: 1 },
];

describe('branches', () => {
  it('sends each prospect down the branch its answer decides: out-of-office, auto-reply, silence, reply', async () => {
    const { tenant, campaign } = await outreach({ smtp: sink.url, steps: branched });
    const ids = {
      ooo: await addProspect(tenant.account.id, campaign.id, { email: 'ooo@ex.org', name: 'O' }),
      auto: await addProspect(tenant.account.id, campaign.id, { email: 'auto@ex.org', name: 'A' }),
      quiet: await addProspect(tenant.account.id, campaign.id, { email: 'quiet@ex.org', name: 'Q' }),
      human: await addProspect(tenant.account.id, campaign.id, { email: 'human@ex.org', name: 'H' }),
    };
    for (const id of Object.values(ids)) {
      expect((await runSequenceStep(db(), id, 1)).kind).toBe('written');
      await deliver(worker.delivery, (await stepMessage(id, 1))!.id);
      // each waits at the condition, shown in its detail
      expect(await prospect(id)).toMatchObject({ node: 'check', step: 1 });
    }
    // the answers come in through the inbound path
    expect(await answer(tenant.mailbox.id, (await stepMessage(ids.ooo, 1))!.messageIdHeader, 'ooo')).toMatchObject({ kind: 'auto_reply' });
    expect(await answer(tenant.mailbox.id, (await stepMessage(ids.auto, 1))!.messageIdHeader, 'auto')).toMatchObject({ kind: 'auto_reply' });
    expect(await answer(tenant.mailbox.id, (await stepMessage(ids.human, 1))!.messageIdHeader, 'reply')).toMatchObject({ kind: 'reply' });

    // the out-of-office decided its condition at once: on the welcome-back branch, due now
    expect(await prospect(ids.ooo)).toMatchObject({ node: 'welcome-back', status: 'later' });
    expect((await prospect(ids.ooo)).nextAt!.getTime()).toBeLessThanOrEqual(Date.now());
    // the person who answered is replied, and gets no further step
    expect(await prospect(ids.human)).toMatchObject({ status: 'replied', node: 'check' });
    expect(await runSequenceStep(db(), ids.human, 2)).toMatchObject({ kind: 'skipped' });

    // the wait of 48 hours is over for the others
    for (const id of [ids.auto, ids.quiet]) {
      expect(await runSequenceStep(db(), id, 2)).toMatchObject({ kind: 'deferred', why: 'not_due' });
      await dueNow(id, 49);
    }
    // the auto-reply came half an hour after the first email, 48.5 hours ago
    await db().inboundMessage.updateMany({ where: { prospectId: ids.auto }, data: { receivedAt: new Date(Date.now() - 48.5 * HOUR) } });
    for (const id of [ids.ooo, ids.auto, ids.quiet]) expect((await runSequenceStep(db(), id, 2)).kind).toBe('written');
    expect(await stepMessage(ids.ooo, 2)).toMatchObject({ stepKey: 'welcome-back', text: 'Back from holidays?' });
    expect(await stepMessage(ids.auto, 2)).toMatchObject({ stepKey: 'after-auto', text: 'Saw your auto-reply' });
    expect(await stepMessage(ids.quiet, 2)).toMatchObject({ stepKey: 'silence', text: 'Nothing yet?' });
    // a branch ends where its steps end: welcome-back and after-auto were their branches' last; silence names next
    expect(await prospect(ids.ooo)).toMatchObject({ node: '$end' });
    expect(await prospect(ids.auto)).toMatchObject({ node: '$end' });
    expect(await prospect(ids.quiet)).toMatchObject({ node: 'last' });
    for (const id of Object.values(ids)) {
      const m = await stepMessage(id, 2);
      if (m) await deliver(worker.delivery, m.id);
    }
    const to = (address: string) => sink.messages.filter((m) => m.envelope.to.includes(address)).map((m) => (m.parsed.text ?? '').trim());
    expect(to('ooo@ex.org')).toEqual(['First', 'Back from holidays?']);
    expect(to('auto@ex.org')).toEqual(['First', 'Saw your auto-reply']);
    expect(to('quiet@ex.org')).toEqual(['First', 'Nothing yet?']);
    expect(to('human@ex.org')).toEqual(['First']);

    // the campaign's tree counts where each is
    const stats = (await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}/stats`).expect(200)).body.stats;
    const node = (id: string) => stats.tree.nodes.find((n: { id: string }) => n.id === id);
    expect(node('intro')).toMatchObject({ type: 'email', sent: 4, next: 'check' });
    expect(node('check')).toMatchObject({ type: 'condition', then: 'welcome-back', else: 'auto-check' });
    expect(node('silence')).toMatchObject({ sent: 1, next: 'last' });
    expect(node('last')).toMatchObject({ sent: 0, waiting: 1 });
    expect(stats.tree.ended).toBe(2);

    // the console's campaign page draws it as a tree: a condition's branches under it, counts per step (each cell
    // labelled with its column: a card on a phone)
    const agent = request.agent(ctx.api.app);
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await agent.get('/admin/signin')).text)![1]!;
    await agent.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }).expect(303);
    const page = (await agent.get(`/admin/campaigns/${campaign.id}`).expect(200)).text;
    const row = (id: string) => new RegExp(`<tr data-step="${id}"><td data-label="Step" class="depth-(\\d+)">(.*?)</td><td data-label="Sent">(\\d*)</td><td data-label="Waiting here">(\\d*)</td></tr>`).exec(page)?.slice(1);
    expect(row('intro')).toEqual(['0', '<strong>intro</strong>', '4', '0']);
    expect(row('check')).toEqual(['0', '<strong>check</strong>: if out_of_office', '', '0']);
    expect(row('welcome-back')).toEqual(['1', '<span class="muted">then →</span> <strong>welcome-back</strong>', '1', '0']);
    expect(row('silence')).toEqual(['2', '<span class="muted">else →</span> <strong>silence</strong>', '1', '0']);
    expect(row('last')).toEqual(['2', '<strong>last</strong>', '0', '1']);
  });

  it('branches on a click: a person clicking takes then at once, no click takes else once within_hours have passed', async () => {
    const { tenant, campaign } = await outreach({
      smtp: sink.url,
      steps: [
        { id: 'a', subject: 'Look', body: 'See https://example.test/offer', delay_hours: 0 },
        { id: 'c', type: 'condition', if: 'clicked', within_hours: 24, then: 'thanks', else: 'nudge' },
        { id: 'thanks', subject: 'Glad you looked', body: 'thanks', delay_hours: 0 },
        { id: 'nudge', subject: 'Did you see it?', body: 'nudge', delay_hours: 0 },
      ],
    });
    await db().campaign.update({ where: { id: campaign.id }, data: { trackClicks: true } });
    const clicker = await addProspect(tenant.account.id, campaign.id, { email: 'click@ex.org' });
    const idle = await addProspect(tenant.account.id, campaign.id, { email: 'idle@ex.org' });
    for (const id of [clicker, idle]) await runSequenceStep(db(), id, 1);
    const m = (await stepMessage(clicker, 1))!;
    // delivered an hour ago (a request right after delivery is a link scanner's), then the person follows the link
    await db().message.update({ where: { id: m.id }, data: { status: 'sent', sentAt: new Date(Date.now() - HOUR) } });
    const link = /https?:\/\/[^\s]+\/c\/([A-Za-z0-9._~-]+)/.exec(m.text!)!;
    await request(ctx.api.app).get(`/c/${link[1]}`).expect(302).expect('Location', 'https://example.test/offer');
    // decided by the click: due now, without waiting the 24 hours
    expect((await prospect(clicker)).nextAt!.getTime()).toBeLessThanOrEqual(Date.now());
    expect((await runSequenceStep(db(), clicker, 2)).kind).toBe('written');
    expect(await stepMessage(clicker, 2)).toMatchObject({ stepKey: 'thanks' });
    expect(await runSequenceStep(db(), idle, 2)).toMatchObject({ kind: 'deferred', why: 'not_due' });
    await dueNow(idle, 25);
    expect((await runSequenceStep(db(), idle, 2)).kind).toBe('written');
    expect(await stepMessage(idle, 2)).toMatchObject({ stepKey: 'nudge' });
  });

  it('an edit keeps each prospect where it is, never resends a step, and ends the path of one whose step was removed', async () => {
    const { tenant, campaign } = await outreach({
      smtp: sink.url,
      steps: [
        { subject: 'One', body: 'one', delay_hours: 0 },
        { subject: 'Two', body: 'two', delay_hours: 0 },
        { subject: 'Three', body: 'three', delay_hours: 0 },
      ],
    });
    const atTwo = await addProspect(tenant.account.id, campaign.id, { email: 'two@ex.org' });
    const atThree = await addProspect(tenant.account.id, campaign.id, { email: 'three@ex.org' });
    await runSequenceStep(db(), atTwo, 1);
    await runSequenceStep(db(), atThree, 1);
    await runSequenceStep(db(), atThree, 2);
    // legacy rows are placed by position: forget the node the writer set, as rows from before branches have none
    await db().prospect.updateMany({ where: { id: { in: [atTwo, atThree] } }, data: { node: null } });
    // a new first step goes in front, step "3" is removed
    await db().$transaction((tx) =>
      updateCampaign(tx, campaign.id, {
        steps: [
          { id: 'new', subject: 'New', body: 'new', delay_hours: 0 },
          { id: '1', subject: 'One', body: 'one', delay_hours: 0 },
          { id: '2', subject: 'Two', body: 'two', delay_hours: 0 },
        ],
      }),
    );
    expect(await prospect(atTwo)).toMatchObject({ node: '2', status: 'writing' });
    expect(await prospect(atThree)).toMatchObject({ status: 'lost', reason: 'step_removed' });
    await dueNow(atTwo);
    expect((await runSequenceStep(db(), atTwo, 2)).kind).toBe('written');
    expect(await stepMessage(atTwo, 2)).toMatchObject({ text: 'two' });
    // "new" sits before where it was: never sent to it
    expect(await db().message.count({ where: { prospectId: atTwo, stepKey: 'new' } })).toBe(0);
  });

  it('refuses, 400 naming why: a branch to a step that does not exist, a cycle, weights summing to 0, opens', async () => {
    const tenant = await outreach({ smtp: sink.url, status: 'draft' });
    const post = (steps: unknown[]) =>
      asAdmin(ctx.api).post('/admin/api/campaigns').send({ account: tenant.tenant.account.id, name: 'B', goal: 'plain', mailbox: tenant.tenant.mailbox.id, steps });
    const email = (id: string, extra: object = {}) => ({ id, subject: 's', body: 'b', delay_hours: 0, ...extra });
    const cases: [unknown[], RegExp][] = [
      [[email('a'), { id: 'c', type: 'condition', if: 'replied', within_hours: 1, then: 'a', else: 'nowhere' }], /"c" else names "nowhere", which is not a step/],
      [[email('a', { next: 'b' }), email('b', { next: 'a' })], /cycle: a -> b -> a/],
      [[email('a'), { id: 'c', type: 'condition', if: 'not_replied', within_hours: 1, then: 'a', else: 'a' }], /cycle/],
      [[{ id: 'a', delay_hours: 0, variants: [{ subject: 'x', body: 'x', weight: 0 }, { subject: 'y', body: 'y', weight: 0 }] }], /weights must sum to a positive number/],
      [[email('a'), { id: 'c', type: 'condition', if: 'opened', within_hours: 1, then: 'a', else: 'a' }], /opens are not a branch condition/],
      [[{ id: 'a', delay_hours: 0, variants: [{ subject: 'x', body: 'x' }, { subject: 'y', body: 'y' }], winner: { metric: 'opens', after_hours: 1, min_sample: 10 } }], /replies or clicks; opens cannot pick a winner/],
      [[email('a'), email('a')], /the id "a" is given to two steps/],
    ];
    for (const [steps, why] of cases) {
      const res = await post(steps);
      expect({ steps, status: res.status, error: res.body.error }).toEqual({ steps, status: 400, error: expect.stringMatching(why) });
    }
    expect(await db().campaign.count({ where: { accountId: tenant.tenant.account.id } })).toBe(1);
  });
});

describe('what a condition reads', () => {
  it('reads that nothing happened for a prospect that is gone (no row: every fact false)', async () => {
    expect(await conditionFacts(db(), -1, new Date(0), new Date())).toEqual({ replied: false, clicked: false, auto_replied: false, out_of_office: false });
  });
});
