import { db } from '../../apps/core/src/db';
import { emitEvent } from '../../apps/core/src/events';
import { QUEUE, jobId, queue, webhookRetryDelayMs } from '../../apps/core/src/queues';
import { OVERDUE_AFTER_MS, rebuildBroadcastJobs, rebuildWebhookJobs } from '../../apps/core/src/recovery';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addActive, broadcastTenant, waitStatus } from '../broadcasts/support';
import { hook, useDispatcher, useReceiver } from './support';

/**
 * Redis lost with work waiting in it: the webhook retries and a scheduled broadcast are rebuilt from their Postgres
 * rows (recovery/index.ts), with the due time they had. Redis's loss is played by obliterating the queue.
 */
const ctx = useApi();
const sink = useMail({ queues: ['webhook', 'broadcast', 'delivery'] });
useDispatcher();
const receiver = useReceiver();

it('a webhook retry Redis lost is rebuilt from its row, at its due time, counting the attempts already made', async () => {
  const account = await makeAccount();
  receiver.answers = [500, 500, 500];
  const h = await hook(ctx.api, account.id, receiver);
  await db().$transaction((tx) => emitEvent(tx, account.id, 'subscriber.confirmed', { list: 'news', email: 'a@reader.org', status: 'active' }));
  const event = await db().event.findFirstOrThrow({ where: { accountId: account.id } });
  // three failed attempts: the fourth is due WEBHOOK_RETRY_BASE_MS x 4^2 after the third, a delayed job in Redis
  const row = await waitFor(async () => {
    const r = await db().webhookJob.findUnique({ where: { eventId_webhookId: { eventId: event.id, webhookId: h.id } } });
    return r?.attempts === 3 ? r : undefined;
  }, { what: 'three attempts recorded on the row' });
  const webhooks = queue(QUEUE.webhook);
  await waitFor(async () => ((await (await webhooks.getJob(jobId.webhook(event.id, h.id)))?.getState()) === 'delayed' ? true : undefined), { what: 'the retry delayed' });
  expect(row.dueAt.getTime() - Date.now()).toBeLessThanOrEqual(webhookRetryDelayMs(3));

  await webhooks.obliterate({ force: true }); // Redis comes back empty
  expect(receiver.deliveries).toHaveLength(3);
  // not due yet: nothing rebuilt; once due (and the margin past), the job is back and the receiver gets attempt 4
  expect(await rebuildWebhookJobs(db(), new Date(row.dueAt.getTime() - 1))).toBe(0);
  expect(await rebuildWebhookJobs(db(), new Date(row.dueAt.getTime() + OVERDUE_AFTER_MS + 1))).toBe(1);
  // a second pass finds the job on its way (or the row gone): nothing added twice
  expect(await rebuildWebhookJobs(db(), new Date(row.dueAt.getTime() + OVERDUE_AFTER_MS + 1))).toBe(0);
  const got = await waitFor(() => (receiver.deliveries.length >= 4 ? receiver.deliveries : undefined), { what: 'the rebuilt attempt' });
  expect(got.map((d) => d.status)).toEqual([500, 500, 500, 200]);
  expect(new Set(got.map((d) => d.id))).toEqual(new Set([event.id]));
  const attempts = await waitFor(async () => {
    const rows = await db().webhookDelivery.findMany({ where: { webhookId: h.id }, orderBy: { attempt: 'asc' } });
    return rows.length === 4 ? rows : undefined;
  });
  expect(attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 500], [2, 500], [3, 500], [4, 200]]);
  await waitFor(async () => ((await db().webhookJob.count({ where: { eventId: event.id } })) === 0 ? true : undefined), { what: 'the row gone once delivered' });
});

it('a scheduled broadcast Redis lost goes out when due, rebuilt from its row', async () => {
  const t = await broadcastTenant(sink.url);
  await addActive(t.listId, 3, 'later');
  const sendAt = new Date(Date.now() + 1500);
  const created = await asAdmin(ctx.api).post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'Later', text: 'x', send_at: sendAt.toISOString() });
  const id = created.body.broadcast.id as number;
  expect((await asAdmin(ctx.api).patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' })).body.broadcast.status).toBe('scheduled');
  await queue(QUEUE.broadcast).obliterate({ force: true }); // Redis comes back empty, the broadcast still scheduled
  expect(await rebuildBroadcastJobs(db(), new Date(sendAt.getTime() - 1))).toBe(0);
  expect(await rebuildBroadcastJobs(db(), new Date(sendAt.getTime() + OVERDUE_AFTER_MS + 1))).toBe(1);
  await waitStatus(id, 'sent');
  expect(sink.messages.filter((m) => m.envelope.to[0]!.startsWith('later-'))).toHaveLength(3);
});
