import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { tokenOfStored } from '../lists/support';
import type { Delivery } from './receiver';
import { hook, useDispatcher, useReceiver } from './support';

/**
 * Each event type fires once for its change, end to end: the change (through the public API, the confirmation page or
 * the worker), the outbox, the worker's fan-out and signed delivery to a real receiver that verifies every request.
 */
const ctx = useApi();
const sink = useMail({ queues: ['delivery', 'sequence', 'webhook'] });
useDispatcher();
const receiver = useReceiver();

let n = 0;
const address = (label: string) => `${label}-${Date.now().toString(36)}-${n++}@reader.org`;

async function hookedTenant() {
  const tenant = await makeTenant({ smtp: sink.url, prospects: true, mailbox: { daily_limit: 1000, gap_seconds: 0 } });
  await hook(ctx.api, tenant.account.id, receiver);
  return { tenant, client: as(ctx.api, tenant.token) };
}

/** The one verified delivery of `type` whose data matches, once it arrived; and the outbox holds exactly one such event. */
async function once(type: string, match: (data: Record<string, unknown>) => boolean): Promise<Delivery> {
  const [delivery] = await waitFor(() => {
    const found = receiver.accepted(type, match);
    return found.length ? found : undefined;
  }, { timeout: 25_000, what: `${type} at the receiver` });
  expect(receiver.accepted(type, match)).toHaveLength(1);
  expect(delivery!.verifiedBy.length).toBeGreaterThan(0);
  const events = await db().event.findMany({ where: { type } });
  expect(events.filter((e) => match(e.data as Record<string, unknown>))).toHaveLength(1);
  return delivery!;
}

afterAll(() => {
  // every request the receiver got carried a signature it verified with standardwebhooks
  expect(receiver.deliveries.length).toBeGreaterThan(0);
  expect(receiver.deliveries.filter((d) => d.verifiedBy.length === 0)).toEqual([]);
});

describe('message events', () => {
  it('message.sent: an accepted send delivered over SMTP, with send id, to, subject, smtp answer and metadata', async () => {
    const { tenant, client } = await hookedTenant();
    const to = address('sent');
    const res = await client.post('/api/v1/send').send({ to, subject: 'Your receipt', text: 'Thanks', metadata: { order: 42 } });
    expect(res.status).toBe(202);
    const messageId = res.body.messages[0].id as string;
    const delivery = await once('message.sent', (d) => d.id === messageId);
    expect(delivery.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(delivery.body)).toMatchObject({ type: 'message.sent', timestamp: expect.stringMatching(/Z$/) });
    expect(delivery.data).toMatchObject({ id: messageId, send_id: res.body.id, to, subject: 'Your receipt', status: 'sent', metadata: { order: 42 } });
    expect(delivery.data.smtp_response).toMatch(/^250/);
    expect(sink.to(to)).toHaveLength(1);
    expect((await db().event.findFirstOrThrow({ where: { type: 'message.sent', accountId: tenant.account.id } })).dispatchedAt).not.toBeNull();
  });

  it('message.sent is not written for an account without an endpoint that wants it (the mark writes no outbox row)', async () => {
    const tenant = await makeTenant({ smtp: sink.url, mailbox: { daily_limit: 1000, gap_seconds: 0 } });
    const client = as(ctx.api, tenant.token);
    const quiet = address('quiet');
    const res = await client.post('/api/v1/send').send({ to: quiet, subject: 'Nobody listens', text: 'Hi' });
    expect(res.status).toBe(202);
    const id = res.body.messages[0].id as string;
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id } })).status === 'sent' || undefined, { what: 'the quiet send marked sent' });
    expect(sink.to(quiet)).toHaveLength(1);
    expect(await db().event.count({ where: { accountId: tenant.account.id } })).toBe(0);

    // an endpoint for other types only: still nothing; one for message.sent: the next delivery writes its event
    await hook(ctx.api, tenant.account.id, receiver, ['message.bounced']);
    const second = (await client.post('/api/v1/send').send({ to: address('quiet'), subject: 'Still nobody', text: 'Hi' })).body.messages[0].id as string;
    await waitFor(async () => (await db().message.findUniqueOrThrow({ where: { id: second } })).status === 'sent' || undefined, { what: 'the second send marked sent' });
    expect(await db().event.count({ where: { accountId: tenant.account.id } })).toBe(0);
    await hook(ctx.api, tenant.account.id, receiver, ['message.sent']);
    const third = (await client.post('/api/v1/send').send({ to: address('heard'), subject: 'Heard', text: 'Hi' })).body.messages[0].id as string;
    await once('message.sent', (d) => d.id === third);
    expect(await db().event.count({ where: { accountId: tenant.account.id } })).toBe(1);
  });

  it('message.bounced: the receiving server answers 5xx to the recipient', async () => {
    const { client } = await hookedTenant();
    const to = address('bounce');
    sink.rule = (stage, addr) => (stage === 'rcpt' && addr === to ? { code: 550, message: 'no such user here' } : undefined);
    const res = await client.post('/api/v1/send').send({ to, subject: 'Hello', text: 'Hi' });
    const delivery = await once('message.bounced', (d) => d.to === to);
    expect(delivery.data).toMatchObject({ id: res.body.messages[0].id, status: 'bounced' });
    expect(delivery.data.smtp_response).toMatch(/550/);
    expect(receiver.accepted('message.sent', (d) => d.to === to)).toHaveLength(0);
  });

  it('message.failed: the server refuses the content for good', async () => {
    const { client } = await hookedTenant();
    const to = address('failed');
    sink.rule = (stage, addr) => (stage === 'data' && addr === to ? { code: 554, message: 'content rejected' } : undefined);
    const res = await client.post('/api/v1/send').send({ to, subject: 'Hello', text: 'Hi' });
    const delivery = await once('message.failed', (d) => d.to === to);
    expect(delivery.data).toMatchObject({ id: res.body.messages[0].id, status: 'failed' });
  });
});

describe('subscriber events', () => {
  it('pending on a double opt-in add, confirmed by the link, unsubscribed on removal: each once', async () => {
    const { tenant, client } = await hookedTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: true });
    const email = address('sub');
    expect((await client.post('/api/v1/subscribers').send({ list: list.key, email })).body.status).toBe('pending');
    expect((await once('subscriber.pending', (d) => d.email === email)).data).toEqual({ list: list.key, email, status: 'pending' });
    // adding again while pending is no new state
    expect((await client.post('/api/v1/subscribers').send({ list: list.key, email })).body.status).toBe('pending');

    const confirmation = await db().message.findFirstOrThrow({ where: { to: email, kind: 'confirmation' } });
    const confirm = await request(ctx.api.app).post(`/confirm/${tokenOfStored(confirmation)}`).type('form').send('');
    expect(confirm.status).toBe(200);
    expect((await once('subscriber.confirmed', (d) => d.email === email)).data).toEqual({ list: list.key, email, status: 'active' });

    expect((await client.delete('/api/v1/subscribers').send({ list: list.key, email })).body.status).toBe('unsubscribed');
    expect((await once('subscriber.unsubscribed', (d) => d.email === email)).data).toEqual({ list: list.key, email, status: 'unsubscribed' });
    expect(receiver.accepted('subscriber.pending', (d) => d.email === email)).toHaveLength(1);
  });

  it('confirmed when added active (a list without confirmation)', async () => {
    const { tenant, client } = await hookedTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const email = address('direct');
    expect((await client.post('/api/v1/subscribers').send({ list: list.key, email })).body.status).toBe('active');
    await once('subscriber.confirmed', (d) => d.email === email && d.list === list.key);
    expect(receiver.accepted('subscriber.pending', (d) => d.email === email)).toHaveLength(0);
  });
});

describe('prospect events', () => {
  const changed = (email: string, status: string) => (d: Record<string, unknown>) => d.email === email && d.status === status;

  it('sequence-made changes: ready when the campaign starts, writing when step 1 goes out, lost/no_reply after the wait', async () => {
    const { tenant, client } = await hookedTenant();
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, {
      status: 'draft',
      steps: [{ subject: 'Hello {{name}}', body: 'Hi', delay_hours: 0.0005 }],
    });
    const email = address('seq');
    await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email, name: 'Ada' }] });
    const start = await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ status: 'running' });
    expect(start.status).toBe(200);
    const ready = await once('prospect.state_changed', changed(email, 'ready'));
    expect(ready.data).toMatchObject({ previous: 'new', campaign: campaign.id, email, name: 'Ada' });
    // the API's kick queues nothing for a draft campaign's prospects; the schedule task does (run here by hand)
    const { scheduleDueSteps } = await import('../../apps/core/src/outreach/scheduler');
    const writing = await waitFor(async () => {
      await scheduleDueSteps(db(), { campaignId: campaign.id });
      const found = receiver.accepted('prospect.state_changed', changed(email, 'writing'));
      return found.length ? found : undefined;
    }, { timeout: 25_000, interval: 300, what: 'writing' });
    expect(writing).toHaveLength(1);
    expect(writing[0]!.data).toMatchObject({ previous: 'ready', step: 1 });
    const lost = await once('prospect.state_changed', changed(email, 'lost'));
    expect(lost.data).toMatchObject({ previous: 'writing', reason: 'no_reply' });
  });

  it('caller-made changes: replied (also prospect.replied), lost with its reason, stop', async () => {
    const { tenant, client } = await hookedTenant();
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, {
      status: 'running',
      steps: [
        { subject: 'Hello', body: 'Hi', delay_hours: 0 },
        { subject: 'Again', body: 'Hi again', delay_hours: 10 },
      ],
    });
    const [replies, loses, stops] = [address('replies'), address('loses'), address('stops')];
    await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: replies }, { email: loses }, { email: stops }] });
    for (const email of [replies, loses, stops]) await once('prospect.state_changed', changed(email, 'writing'));

    const state = (body: Record<string, unknown>) => client.post('/api/v1/prospects/state').send({ campaign: campaign.id, ...body });
    expect((await state({ email: replies, state: 'replied' })).status).toBe(200);
    expect((await once('prospect.replied', (d) => d.email === replies)).data).toMatchObject({ status: 'replied', previous: 'writing' });
    await once('prospect.state_changed', changed(replies, 'replied'));
    // reporting the state it already has changes nothing, and emits nothing
    expect((await state({ email: replies, state: 'replied' })).status).toBe(200);

    expect((await state({ email: loses, state: 'lost', reason: 'price' })).status).toBe(200);
    expect((await once('prospect.state_changed', changed(loses, 'lost'))).data).toMatchObject({ reason: 'price', previous: 'writing' });

    expect((await state({ email: stops, state: 'stop' })).status).toBe(200);
    expect((await once('prospect.state_changed', changed(stops, 'lost'))).data).toMatchObject({ reason: 'stopped', previous: 'writing' });
    expect(await db().event.count({ where: { type: 'prospect.state_changed', accountId: tenant.account.id } })).toBe(6);
    expect(await db().event.count({ where: { type: 'prospect.replied', accountId: tenant.account.id } })).toBe(1);
  });
});

describe('docs/webhooks.md', () => {
  /** Every whole JSON example of an event in the doc, by type (abbreviated ones are left out). */
  function documented(): Map<string, Record<string, unknown>> {
    const doc = fs.readFileSync(path.join(__dirname, '../../docs/webhooks.md'), 'utf8');
    const examples = new Map<string, Record<string, unknown>>();
    // fenced blocks, in order: every other fence opens one
    const blocks = doc.split(/^```[a-z]*$/m).filter((_, i) => i % 2 === 1);
    for (const block of blocks) {
      try {
        const event = JSON.parse(block) as { type?: string; data?: Record<string, unknown> };
        // an abbreviated example ("...": "as above") shows some fields only
        if (event.type && event.data && !('...' in event.data)) examples.set(event.type, event.data);
      } catch {
        // not an example of an event
      }
    }
    return examples;
  }

  it("each example's data has exactly the fields the service sends for its type (the events above, as delivered)", () => {
    const examples = documented();
    const compared: string[] = [];
    for (const [type, data] of examples) {
      const sent = receiver.accepted(type)[0];
      if (!sent) continue;
      expect({ type, fields: Object.keys(data).sort() }).toEqual({ type, fields: Object.keys(sent.data).sort() });
      compared.push(type);
    }
    // the message, subscriber and prospect events this file makes, each checked against its example
    expect(compared.sort()).toEqual(
      ['message.bounced', 'message.failed', 'message.sent', 'prospect.replied', 'prospect.state_changed', 'subscriber.confirmed', 'subscriber.pending', 'subscriber.unsubscribed'].filter((t) => examples.has(t)),
    );
    expect(compared.length).toBeGreaterThanOrEqual(6);
  });
});
