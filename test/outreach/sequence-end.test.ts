import { db } from '../../apps/core/src/db';
import { newId } from '../../apps/core/src/ids';
import { applyBounce } from '../../apps/core/src/inbound/bounce-policy';
import { changeCampaign } from '../../apps/core/src/outreach/campaigns';
import { optOutByToken, prospectUnsubscribeToken } from '../../apps/core/src/outreach/opt-out';
import { reportOutcome } from '../../apps/core/src/outreach/outcomes';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { addToStopList } from '../../apps/core/src/stop-list/repository';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { makeList, wantEvents } from '../helpers/factories';
import { addProspect, outreach } from './support';

/**
 * "A prospect's sequence ends" is written once (outreach/end.ts): every path that ends one must close it (its status
 * and reason), leave no step due (next_at null), keep when it closed (closed_at) and write `prospect.state_changed`
 * with the status it left. Each path is checked for each, so a caller that ended a prospect some other way fails here.
 */
let n = 0;
const address = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${n++}@example.org`;

/** A running two-step campaign (an account that wants events) with one prospect, due for its first step. */
async function prospectFixture() {
  const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
  await wantEvents(tenant.account.id);
  const email = address('end');
  const id = await addProspect(tenant.account.id, campaign.id, { email, name: 'Pat' });
  return { tenant, campaign, email, id };
}

type Fixture = Awaited<ReturnType<typeof prospectFixture>>;

/** The prospect as if its step `step` went out and the wait after it is over (due now, at that step). */
const atStep = (f: Fixture, step: number) =>
  db().prospect.update({ where: { id: f.id }, data: { status: 'writing', step, nextAt: new Date(Date.now() - 60_000) } });

const PATHS: { name: string; ends: { status: string; reason: string }; run: (f: Fixture) => Promise<unknown> }[] = [
  {
    name: 'the step writer, at the end of the path without an answer',
    ends: { status: 'lost', reason: 'no_reply' },
    run: async (f) => {
      await atStep(f, 2);
      expect(await runSequenceStep(db(), f.id, 3)).toEqual({ kind: 'closed' });
    },
  },
  {
    name: 'the step writer, an address on the stop list',
    ends: { status: 'lost', reason: 'stopped' },
    run: async (f) => {
      await addToStopList(db(), f.tenant.account.id, f.email);
      expect(await runSequenceStep(db(), f.id, 1)).toMatchObject({ kind: 'skipped' });
    },
  },
  {
    name: 'the step writer, an address on the suppression list',
    ends: { status: 'lost', reason: 'bounced' },
    run: async (f) => {
      await db().suppression.create({ data: { accountId: f.tenant.account.id, email: f.email, reason: 'manual' } });
      expect(await runSequenceStep(db(), f.id, 1)).toMatchObject({ kind: 'skipped' });
    },
  },
  {
    name: "the caller's outcome lost",
    ends: { status: 'lost', reason: 'price' },
    run: (f) => reportOutcome(db(), f.tenant.account.id, { campaign: f.campaign.id, email: f.email, state: 'lost', reason: 'price' }),
  },
  {
    name: "the caller's outcome agreed (won)",
    ends: { status: 'agreed', reason: '' },
    run: (f) => reportOutcome(db(), f.tenant.account.id, { campaign: f.campaign.id, email: f.email, state: 'agreed' }),
  },
  {
    name: "the caller's stop",
    ends: { status: 'lost', reason: 'stopped' },
    run: (f) => reportOutcome(db(), f.tenant.account.id, { campaign: f.campaign.id, email: f.email, state: 'stop' }),
  },
  {
    name: 'the opt-out link',
    ends: { status: 'lost', reason: 'unsubscribed' },
    run: (f) => optOutByToken(db(), prospectUnsubscribeToken(f.id)),
  },
  {
    name: 'the step it waits for removed from the campaign',
    ends: { status: 'lost', reason: 'step_removed' },
    run: async (f) => {
      await db().prospect.update({ where: { id: f.id }, data: { status: 'writing', step: 1, nextAt: new Date(Date.now() + 3_600_000) } });
      await changeCampaign(db(), f.campaign.id, { steps: [{ subject: 'Hello {{name}}', body: 'Hi {{name}}', delay_hours: 0 }] });
    },
  },
  {
    name: 'a dead bounce at delivery (the address suppressed)',
    ends: { status: 'lost', reason: 'bounced' },
    run: async (f) => {
      await atStep(f, 1);
      const id = newId();
      const message = await db().message.create({ data: { id, messageIdHeader: `<${id}@example.com>`, accountId: f.tenant.account.id, mailboxId: f.tenant.mailbox.id, to: f.email, subject: 'Hello', kind: 'sequence', prospectId: f.id, step: 1 } });
      const bounce = { reason: 'userunknown', class: 'dead', status: '5.1.1', smtp_code: '550', diagnostic: '550 5.1.1 no such user', dead: true, at: new Date().toISOString() };
      expect(await db().$transaction((tx) => applyBounce(tx, f.tenant.account.id, message.id, f.email, bounce as never))).toEqual({ suppressed: true });
    },
  },
  {
    name: 'a complaint (the address suppressed)',
    ends: { status: 'lost', reason: 'complained' },
    run: (f) => db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, f.email, 'complained', 'abuse')),
  },
];

describe('every path that ends a sequence does everything ending entails', () => {
  it.each(PATHS)('$name: closed, nothing due, closed_at kept, prospect.state_changed written', async (path) => {
    const f = await prospectFixture();
    const before = await db().prospect.findUniqueOrThrow({ where: { id: f.id } });
    const since = new Date(Date.now() - 1000);
    await path.run(f);

    const after = await db().prospect.findUniqueOrThrow({ where: { id: f.id } });
    expect({ status: after.status, reason: after.reason }).toEqual(path.ends);
    expect(after.nextAt).toBeNull();
    expect(after.closedAt).toBeInstanceOf(Date);
    expect(after.closedAt!.getTime()).toBeGreaterThanOrEqual(since.getTime());

    const events = await db().event.findMany({ where: { accountId: f.tenant.account.id, type: 'prospect.state_changed', createdAt: { gte: since } } });
    const data = events.map((e) => e.data as { id: number; status: string; previous: string });
    expect(data.filter((d) => d.id === f.id && d.status === path.ends.status).length).toBe(1);
    const ended = data.find((d) => d.id === f.id && d.status === path.ends.status)!;
    expect(['new', 'ready', 'writing']).toContain(ended.previous);
    expect(before.closedAt).toBeNull();
  });

  it('an address suppressed ends its open prospects in every campaign of the account, and moves its subscriptions', async () => {
    const f = await prospectFixture();
    const other = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    const list = await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: false });
    const subscriber = await db().subscriber.create({ data: { listId: list.id, email: f.email, status: 'active' } });
    await db().list.update({ where: { id: list.id }, data: { subscriberCount: 1 } });
    // another account's prospect at the same address is not touched
    const elsewhere = await addProspect(other.tenant.account.id, other.campaign.id, { email: f.email });
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, f.email.toUpperCase(), 'bounced', '5.1.1'));
    expect(await db().prospect.findUniqueOrThrow({ where: { id: f.id } })).toMatchObject({ status: 'lost', reason: 'bounced', reply: 'bounce', nextAt: null });
    expect((await db().prospect.findUniqueOrThrow({ where: { id: elsewhere } })).status).toBe('ready');
    expect((await db().subscriber.findUniqueOrThrow({ where: { id: subscriber.id } })).status).toBe('bounced');
    expect((await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount).toBe(0);
    expect(await db().suppression.findUnique({ where: { accountId_email: { accountId: f.tenant.account.id, email: f.email } } })).toMatchObject({ reason: 'bounced', detail: '5.1.1' });
  });

  it('a prospect closed already keeps when it closed when the opt-out link ends it again as unsubscribed', async () => {
    const f = await prospectFixture();
    await reportOutcome(db(), f.tenant.account.id, { campaign: f.campaign.id, email: f.email, state: 'agreed' });
    const closed = (await db().prospect.findUniqueOrThrow({ where: { id: f.id } })).closedAt!;
    await new Promise((r) => setTimeout(r, 20));
    await optOutByToken(db(), prospectUnsubscribeToken(f.id));
    const after = await db().prospect.findUniqueOrThrow({ where: { id: f.id } });
    expect({ status: after.status, reason: after.reason }).toEqual({ status: 'lost', reason: 'unsubscribed' });
    expect(after.closedAt!.getTime()).toBe(closed.getTime());
  });
});
