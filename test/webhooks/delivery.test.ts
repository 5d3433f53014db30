import { Webhook } from 'standardwebhooks';
import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { metrics } from '../../apps/core/src/metrics';
import { updateProspect } from '../../apps/core/src/outreach/changes';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeCampaign, makeMailbox } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addProspect } from '../outreach/support';
import { Receiver } from './receiver';
import { hook, useDispatcher } from './support';

/** Delivery mechanics: retries with one webhook-id, rotation, filters, isolation, rollbacks, auto-disable. */
const ctx = useApi();
useMail({ queues: ['webhook'] });
useDispatcher();

const receivers: Receiver[] = [];
async function receiver(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
});

/** Writes one event the way every change does: in a transaction. */
async function emit(account: number, type: Parameters<typeof emitEvent>[2], data: Record<string, unknown>): Promise<string> {
  await db().$transaction((tx) => emitEvent(tx, account, type, data));
  const event = await db().event.findFirstOrThrow({ where: { accountId: account, type }, orderBy: { createdAt: 'desc' } });
  return event.id;
}

const arrivals = (r: Receiver, count: number, what: string) =>
  waitFor(() => (r.deliveries.length >= count ? r.deliveries : undefined), { timeout: 20_000, what });

it('a receiver answering 500 twice then 200 gets the same webhook-id three times, each attempt recorded', async () => {
  const account = await makeAccount();
  const r = await receiver();
  r.answers = [500, 500];
  const h = await hook(ctx.api, account.id, r);
  const counted = async () => {
    const byResult = Object.fromEntries((await metrics.webhookDeliveries.get()).values.map((v) => [v.labels.result, v.value]));
    const seconds = (await metrics.webhookSeconds.get()).values.find((v) => v.metricName === 'mailservice_webhook_seconds_count')?.value ?? 0;
    return { delivered: byResult.delivered ?? 0, failed: byResult.failed ?? 0, seconds };
  };
  const before = await counted();
  const eventId = await emit(account.id, 'subscriber.confirmed', { list: 'news', email: 'a@reader.org', status: 'active' });
  const got = await arrivals(r, 3, 'three attempts');
  expect(got.map((d) => d.status)).toEqual([500, 500, 200]);
  expect(got.map((d) => d.id)).toEqual([eventId, eventId, eventId]);
  for (const d of got) expect(d.verifiedBy).toEqual([h.secret]);
  // the same body every time: the event's own timestamp
  expect(new Set(got.map((d) => d.body)).size).toBe(1);

  const res = await waitFor(async () => {
    const answer = await asAdmin(ctx.api).get(`/admin/api/webhooks/${h.id}/deliveries`);
    return answer.body.deliveries?.length === 3 ? answer : undefined;
  });
  expect(res.body.deliveries).toEqual([
    { event_id: eventId, type: 'subscriber.confirmed', attempt: 3, status_code: 200, error: null, at: expect.any(String) },
    { event_id: eventId, type: 'subscriber.confirmed', attempt: 2, status_code: 500, error: 'HTTP 500', at: expect.any(String) },
    { event_id: eventId, type: 'subscriber.confirmed', attempt: 1, status_code: 500, error: 'HTTP 500', at: expect.any(String) },
  ]);
  const row = await db().webhook.findUniqueOrThrow({ where: { id: h.id } });
  expect(row.failingSince).toBeNull();
  expect(row.lastSuccessAt).not.toBeNull();
  // mailservice_webhook_deliveries_total by result, and one duration per POST; the last attempt counts itself after its
  // rows are written, so the rows above may be seen a moment before the count
  const counts = await waitFor(async () => {
    const now = await counted();
    return now.delivered > before.delivered ? now : undefined;
  }, { what: 'the delivered count' });
  expect(counts).toEqual({ delivered: before.delivered + 1, failed: before.failed + 2, seconds: before.seconds + 3 });
});

it('after a rotation, deliveries verify under the old and the new secret until the overlap ends', async () => {
  const account = await makeAccount();
  const r = await receiver();
  const h = await hook(ctx.api, account.id, r);
  const rotated = await asAdmin(ctx.api).post(`/admin/api/webhooks/${h.id}/rotate`);
  expect(rotated.status).toBe(200);
  const fresh = rotated.body.webhook.secret as string;
  expect(fresh).toMatch(/^whsec_/);
  expect(fresh).not.toBe(h.secret);
  r.secrets = [h.secret, fresh];

  await emit(account.id, 'subscriber.pending', { list: 'news', email: 'b@reader.org', status: 'pending' });
  const [during] = await arrivals(r, 1, 'a delivery during the overlap');
  expect(during!.signature.split(' ')).toHaveLength(2);
  expect(during!.verifiedBy).toEqual([h.secret, fresh]);
  const headers = { 'webhook-id': during!.id, 'webhook-timestamp': during!.timestamp, 'webhook-signature': during!.signature };
  expect(new Webhook(h.secret).verify(during!.body, headers)).toMatchObject({ type: 'subscriber.pending' });
  expect(new Webhook(fresh).verify(during!.body, headers)).toMatchObject({ type: 'subscriber.pending' });

  // 24 hours later (moved by hand): only the new secret signs
  const row = await db().webhook.findUniqueOrThrow({ where: { id: h.id } });
  expect(row.previousUntil!.getTime() - Date.now()).toBeGreaterThan(23.9 * 3600_000);
  await db().webhook.update({ where: { id: h.id }, data: { previousUntil: new Date(Date.now() - 1000) } });
  await emit(account.id, 'subscriber.pending', { list: 'news', email: 'c@reader.org', status: 'pending' });
  const [, after] = await arrivals(r, 2, 'a delivery after the overlap');
  expect(after!.signature.split(' ')).toHaveLength(1);
  expect(after!.verifiedBy).toEqual([fresh]);
});

it('an endpoint subscribed to some events gets only those', async () => {
  const account = await makeAccount();
  const r = await receiver();
  await hook(ctx.api, account.id, r, ['subscriber.confirmed', 'message.sent']);
  await db().$transaction((tx) => emitEvent(tx, account.id, 'subscriber.pending', { list: 'news', email: 'd@reader.org', status: 'pending' }));
  const wanted = await emit(account.id, 'subscriber.confirmed', { list: 'news', email: 'd@reader.org', status: 'active' });
  const [got] = await arrivals(r, 1, 'the subscribed event');
  expect(got).toMatchObject({ id: wanted, type: 'subscriber.confirmed' });
  // no endpoint of the account wants the other one: it was not even written
  expect(await db().event.count({ where: { accountId: account.id, type: 'subscriber.pending' } })).toBe(0);
  expect(r.deliveries.map((d) => d.id)).toEqual([wanted]);
});

it('another account\'s events never reach an endpoint', async () => {
  const [mine, theirs] = [await makeAccount(), await makeAccount()];
  const [rMine, rTheirs] = [await receiver(), await receiver()];
  const hMine = await hook(ctx.api, mine.id, rMine);
  await hook(ctx.api, theirs.id, rTheirs);
  const foreign = await emit(theirs.id, 'message.sent', { id: 'x', to: 'e@reader.org' });
  await arrivals(rTheirs, 1, 'the other account\'s delivery');
  const own = await emit(mine.id, 'message.sent', { id: 'y', to: 'f@reader.org' });
  await arrivals(rMine, 1, 'my delivery');
  expect(rMine.deliveries.map((d) => d.id)).toEqual([own]);
  expect(rTheirs.deliveries.map((d) => d.id)).toEqual([foreign]);
  expect(await queue(QUEUE.webhook).getJob(jobId.webhook(foreign, hMine.id))).toBeUndefined();
});

it('a change that rolled back emits nothing', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const campaign = await makeCampaign(account.id, mailbox.id, { status: 'draft' });
  const prospect = await addProspect(account.id, campaign.id, { email: 'g@reader.org' });
  const r = await receiver();
  await hook(ctx.api, account.id, r);
  await expect(
    db().$transaction(async (tx) => {
      const row = await tx.campaign.findUniqueOrThrow({ where: { id: campaign.id } });
      await updateProspect(tx, row, 'new', prospect, { status: 'ready', nextAt: new Date() });
      throw new Error('the rest of the change failed');
    }),
  ).rejects.toThrow('the rest of the change failed');
  expect((await db().prospect.findUniqueOrThrow({ where: { id: prospect } })).status).toBe('new');
  expect(await db().event.count({ where: { accountId: account.id } })).toBe(0);
  // a later change of the same account arrives alone
  const later = await emit(account.id, 'subscriber.pending', { list: 'news', email: 'g@reader.org', status: 'pending' });
  await arrivals(r, 1, 'the later event');
  expect(r.deliveries.map((d) => d.id)).toEqual([later]);
});

it('disables an endpoint that fails 3 days after its last success, and says so in GET', async () => {
  const account = await makeAccount();
  const r = await receiver();
  r.answers = [503, 503, 503, 503];
  const h = await hook(ctx.api, account.id, r);
  await db().webhook.update({ where: { id: h.id }, data: { failingSince: new Date(Date.now() - 3 * 24 * 3600_000 - 60_000) } });
  await emit(account.id, 'subscriber.pending', { list: 'news', email: 'h@reader.org', status: 'pending' });
  await waitFor(async () => !(await db().webhook.findUniqueOrThrow({ where: { id: h.id } })).enabled, { timeout: 15_000, what: 'disabled' });
  const res = await asAdmin(ctx.api).get(`/admin/api/webhooks?account=${account.id}`);
  expect(res.body.webhooks).toEqual([
    expect.objectContaining({ id: h.id, enabled: false, disabled_reason: 'no successful delivery for 3 days', last_success_at: null }),
  ]);
  expect(res.body.webhooks[0]).not.toHaveProperty('secret');
  // no retry after the disabling failure; enabling again gives it a fresh start
  expect(r.deliveries).toHaveLength(1);
  const enabled = await asAdmin(ctx.api).patch(`/admin/api/webhooks/${h.id}`).send({ enabled: true });
  expect(enabled.body.webhook).toMatchObject({ enabled: true, disabled_reason: '', failing_since: null });
});
