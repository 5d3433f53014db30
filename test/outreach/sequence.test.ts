import type { Worker } from 'bullmq';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { db } from '../../apps/core/src/db';
import { createDelivery } from '../../apps/core/src/delivery/deliver';
import { scheduleDueSteps } from '../../apps/core/src/outreach/scheduler';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { createWorkers } from '../../apps/worker/src/workers';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { outreach } from './support';

/** The whole engine on the wire: API -> scheduler -> step jobs -> delivery -> SMTP sink, with workers in this process. */
const ctx = useApi();
const sink = useMail({ queues: ['delivery', 'sequence'] });

/** 0.0005 hours = 1.8 seconds. */
const SHORT = 0.0005;

async function start(steps: { subject: string; body: string; delay_hours: number }[]) {
  const { tenant, campaign } = await outreach({ smtp: sink.url, steps });
  return { tenant, campaign, client: as(ctx.api, tenant.token) };
}

/** Waits until the step job has run to its end (it wrote, or found it must not). */
const stepSettled = (prospectId: number, step: number) =>
  waitFor(async () => (await (await queue(QUEUE.sequence).getJob(jobId.sequence(prospectId, step)))?.getState()) === 'completed', {
    timeout: 15_000,
    what: `step ${step} of prospect ${prospectId} to settle`,
  });

describe('sequences on the wire', () => {
  it('sends every step with placeholders filled, threaded under the first, spaced by the delays, then ends no_reply', async () => {
    const { campaign, client } = await start([
      { subject: 'Quick question, {{name}}', body: 'Hi {{name}},\nI read {{site}} about {{fields.topic}}.{{fields.nothing}}\n{{email}}', delay_hours: 0 },
      { subject: 'Quick question, {{name}}', body: 'Bumping this, {{name}}.', delay_hours: SHORT },
      { subject: 'Last note on {{fields.topic}}', body: 'Closing the loop.', delay_hours: SHORT },
    ]);
    const added = await client.post('/api/v1/prospects').send({
      campaign: campaign.id,
      prospects: [{ email: 'Ann@Reader.org', name: 'Ann', site: 'https://www.annblog.org/', fields: { topic: 'gardening' } }],
    });
    expect(added.body.added).toBe(1);
    const id = added.body.prospects[0].id as number;

    await waitFor(() => sink.to('ann@reader.org').length === 3, { timeout: 20_000, what: 'three steps at the sink' });
    const [first, second, third] = sink.to('ann@reader.org').map((m) => m.parsed);
    expect(first!.subject).toBe('Quick question, Ann');
    expect(first!.text!.trim()).toBe('Hi Ann,\nI read annblog.org about gardening.\nann@reader.org');
    expect(first!.inReplyTo).toBeUndefined();
    expect(second!.subject).toBe('Re: Quick question, Ann');
    expect(second!.text!.trim()).toBe('Bumping this, Ann.');
    expect(second!.inReplyTo).toBe(first!.messageId);
    expect(second!.references).toBe(first!.messageId);
    expect(third!.subject).toBe('Last note on gardening');
    expect(third!.inReplyTo).toBe(first!.messageId);
    expect(third!.references).toBe(first!.messageId);
    expect(sink.to('ann@reader.org').every((m) => m.envelope.to.length === 1)).toBe(true);

    // the row says `sent` just after the SMTP server's answer, so a moment after the sink has the message
    const rows = await waitFor(
      async () => {
        const found = await db().message.findMany({ where: { prospectId: id }, orderBy: { step: 'asc' } });
        return found.every((r) => r.status === 'sent') ? found : null;
      },
      { timeout: 5_000, what: 'the three steps marked sent' },
    );
    expect(rows.map((r) => r.step)).toEqual([1, 2, 3]);
    for (const [a, b] of [[0, 1], [1, 2]] as const) {
      // not_before records when the step took its mailbox slot, i.e. when it was written; none left before its slot
      expect(rows[b]!.notBefore!.getTime() - rows[a]!.notBefore!.getTime()).toBeGreaterThanOrEqual(1800 - 50);
      expect(rows[b]!.sentAt!.getTime()).toBeGreaterThanOrEqual(rows[b]!.notBefore!.getTime() - 50);
    }

    // the wait after the last step (its own delay again) passes without an answer
    const closed = await waitFor(
      async () => {
        const res = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'ann@reader.org' });
        return res.body.prospect.status === 'lost' ? res.body.prospect : null;
      },
      { timeout: 15_000, what: 'lost/no_reply' },
    );
    expect(closed).toMatchObject({ id, status: 'lost', reason: 'no_reply', step: 3, next_at: null, closed_at: expect.any(String) });
    expect(sink.to('ann@reader.org')).toHaveLength(3);
  });

  it('waits step 1\'s own delay from the moment the prospect was added to a running campaign', async () => {
    const { campaign, client } = await start([{ subject: 'Later', body: 'x', delay_hours: SHORT }]);
    const before = Date.now();
    const added = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'fay@reader.org' }] });
    const id = added.body.prospects[0].id as number;
    const ready = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'fay@reader.org' });
    expect(ready.body.prospect).toMatchObject({ status: 'ready', step: 0 });
    expect(Date.parse(ready.body.prospect.next_at) - before).toBeGreaterThanOrEqual(1800);
    await waitFor(() => sink.to('fay@reader.org').length === 1, { what: 'step 1' });
    const row = (await db().message.findFirstOrThrow({ where: { prospectId: id } }))!;
    expect(row.notBefore!.getTime() - before).toBeGreaterThanOrEqual(1800);
  });

  it('stops the sequence when the prospect replied', async () => {
    const { campaign, client } = await start([
      { subject: 'Hello', body: 'one', delay_hours: 0 },
      { subject: 'Hello', body: 'two', delay_hours: SHORT },
    ]);
    const added = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'bea@reader.org' }] });
    const id = added.body.prospects[0].id as number;
    await waitFor(() => sink.to('bea@reader.org').length === 1, { what: 'the first step' });
    const replied = await client.post('/api/v1/prospects/state').send({ campaign: campaign.id, email: 'bea@reader.org', state: 'replied' });
    expect(replied.body.prospect).toMatchObject({ status: 'replied', step: 1 });
    await stepSettled(id, 2);
    expect(await db().message.count({ where: { prospectId: id } })).toBe(1);
    expect(sink.to('bea@reader.org')).toHaveLength(1);
  });

  it('pausing stops further steps at once; resuming continues where it stopped', async () => {
    const { campaign, client } = await start([
      { subject: 'Hi {{name}}', body: 'one', delay_hours: 0 },
      { subject: 'Hi {{name}}', body: 'two', delay_hours: SHORT },
    ]);
    const added = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'cy@reader.org', name: 'Cy' }, { email: 'di@reader.org', name: 'Di' }] });
    const ids = added.body.prospects.map((p: { id: number }) => p.id) as number[];
    await waitFor(() => sink.to('cy@reader.org').length + sink.to('di@reader.org').length === 2, { what: 'both first steps' });

    const paused = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'paused' });
    expect(paused.body.campaign.status).toBe('paused');
    for (const id of ids) await stepSettled(id, 2);
    expect(await db().message.count({ where: { prospectId: { in: ids }, step: 2 } })).toBe(0);
    expect((await client.get('/api/v1/campaigns')).body.campaigns[0]).toMatchObject({ id: campaign.id, status: 'paused', prospects: 2 });
    const during = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'cy@reader.org' });
    expect(during.body.prospect).toMatchObject({ status: 'writing', step: 1 });

    // the resume itself queues what is due: no scheduler tick runs in this test
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'running' });
    await waitFor(() => sink.to('cy@reader.org').length + sink.to('di@reader.org').length === 4, { what: 'both second steps' });
    const [cyFirst, cySecond] = sink.to('cy@reader.org').map((m) => m.parsed);
    expect(cySecond!.subject).toBe('Re: Hi Cy');
    expect(cySecond!.inReplyTo).toBe(cyFirst!.messageId);
  });

  it('a stop in one campaign ends the address\'s sequences in every campaign of the account', async () => {
    const steps = [
      { subject: 'Hello', body: 'one', delay_hours: 0 },
      { subject: 'Hello', body: 'two', delay_hours: SHORT },
    ];
    const { tenant, campaign, client } = await start(steps);
    const other = await makeCampaign(tenant.account.id, tenant.mailbox.id, { status: 'running', steps });
    const a = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'ed@reader.org' }] });
    const b = await client.post('/api/v1/prospects').send({ campaign: other.id, prospects: [{ email: 'ed@reader.org' }] });
    await waitFor(() => sink.to('ed@reader.org').length === 2, { what: 'the first step of both campaigns' });
    const stop = await client.post('/api/v1/prospects/state').send({ campaign: campaign.id, email: 'ed@reader.org', state: 'stop' });
    expect(stop.body.prospect).toMatchObject({ status: 'lost', reason: 'stopped' });
    await stepSettled(a.body.prospects[0].id, 2);
    await stepSettled(b.body.prospects[0].id, 2);
    expect(sink.to('ed@reader.org')).toHaveLength(2);
    const elsewhere = await client.get('/api/v1/prospects').query({ campaign: other.id, email: 'ed@reader.org' });
    expect(elsewhere.body.prospect).toMatchObject({ status: 'lost', reason: 'stopped' });
    const third = await makeCampaign(tenant.account.id, tenant.mailbox.id, { status: 'running', steps });
    const again = await client.post('/api/v1/prospects').send({ campaign: third.id, prospects: [{ email: 'ed@reader.org' }] });
    expect(again.body).toMatchObject({ stopped: 1, added: 0 });
    expect(await db().message.count({ where: { to: 'ed@reader.org' } })).toBe(2);
  });

  it('with two sets of workers and a scheduler racing the API kick, every prospect gets each step once', async () => {
    // a second worker process: its own delivery (claims, marks, SMTP pools)
    const second = createDelivery(db(), deliveryRegistrations());
    const more = createWorkers({ db: db(), delivery: second, queues: ['delivery', 'sequence'], concurrency: 5 });
    try {
      const { campaign, client } = await start([{ subject: 'Once, {{name}}', body: 'only once', delay_hours: 0 }]);
      const prospects = Array.from({ length: 12 }, (_, i) => ({ email: `once${i}@reader.org`, name: `P${i}` }));
      await Promise.all([client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects }), scheduleDueSteps(db()), scheduleDueSteps(db())]);
      await scheduleDueSteps(db());
      await waitFor(() => prospects.every((p) => sink.to(p.email).length >= 1), { timeout: 20_000, what: 'one email each' });
      await waitFor(async () => (await db().prospect.count({ where: { campaignId: campaign.id, step: 1 } })) === 12, { what: 'all written' });
      await scheduleDueSteps(db());
      expect(prospects.map((p) => sink.to(p.email).length)).toEqual(prospects.map(() => 1));
      expect(await db().message.count({ where: { prospect: { campaignId: campaign.id } } })).toBe(12);
    } finally {
      await Promise.all(more.map((w) => w.close()));
      second.close();
    }
  });
});
