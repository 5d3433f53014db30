import { db } from '../../apps/core/src/db';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { as, useApi } from '../helpers/api';
import { makeTenant, wantEvents } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

const app = useApi();
const sink = useMail({ queues: ['delivery'] });

const HOUR = 3_600_000;

async function tenant() {
  const t = await makeTenant({ smtp: sink.url });
  await wantEvents(t.account.id);
  return { ...t, client: () => as(app.api, t.token) };
}

async function send(t: Awaited<ReturnType<typeof tenant>>, to: string, sendAt?: Date) {
  const res = await t.client().post('/api/v1/send').send({ to, subject: 'Hello', text: 'Hi', ...(sendAt ? { send_at: sendAt.toISOString() } : {}) });
  expect(res.status).toBe(202);
  return res.body as { id: string; messages: { id: string }[] };
}

const row = (id: string) => db().message.findUniqueOrThrow({ where: { id } });

it('a send scheduled an hour ahead and cancelled never reaches the SMTP server, even when its delayed job fires', async () => {
  const t = await tenant();
  const sent = await send(t, 'later@example.org', new Date(Date.now() + HOUR));
  const messageId = sent.messages[0]!.id;
  await waitFor(async () => (await queue(QUEUE.delivery).getJob(jobId.delivery(messageId))) ?? null, { what: 'the delayed job' });

  const cancelled = await t.client().post(`/api/v1/send/${sent.id}/cancel`);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body).toMatchObject({ ok: true, send: { id: sent.id, status: 'cancelled', messages: [{ id: messageId, to: 'later@example.org', status: 'cancelled' }] } });
  expect((await row(messageId)).status).toBe('cancelled');
  const events = await db().event.findMany({ where: { accountId: t.account.id, type: 'message.cancelled' } });
  expect(events.map((e) => (e.data as { id: string }).id)).toEqual([messageId]);

  // the job may still be in Redis (a removal is at best effort): one that fires finds the row cancelled
  await queue(QUEUE.delivery).add(QUEUE.delivery, { messageId }, { jobId: jobId.delivery(messageId) });
  await waitFor(async () => ((await (await queue(QUEUE.delivery).getJob(jobId.delivery(messageId)))?.getState()) === 'completed' ? true : null), { timeout: 15_000, what: 'the job ran' });
  expect(sink.to('later@example.org')).toHaveLength(0);
  expect((await row(messageId)).status).toBe('cancelled');
  // a second cancel answers the same, with nothing more
  expect((await t.client().post(`/api/v1/send/${sent.id}/cancel`)).body.send.status).toBe('cancelled');
  expect(await db().event.count({ where: { accountId: t.account.id, type: 'message.cancelled' } })).toBe(1);
});

it('cancelling after delivery answers 409 and changes nothing; another account\'s send is 404', async () => {
  const t = await tenant();
  const sent = await send(t, 'now@example.org');
  await waitFor(async () => ((await row(sent.messages[0]!.id)).status === 'sent' ? true : null), { timeout: 15_000, what: 'delivery' });
  const late = await t.client().post(`/api/v1/send/${sent.id}/cancel`);
  expect(late.status).toBe(409);
  expect(late.body).toEqual({ ok: false, error: expect.stringContaining('already being sent or sent') });
  expect((await row(sent.messages[0]!.id)).status).toBe('sent');
  expect((await t.client().patch(`/api/v1/send/${sent.id}`).send({ send_at: new Date(Date.now() + HOUR).toISOString() })).status).toBe(409);

  const stranger = await tenant();
  const scheduled = await send(t, 'mine@example.org', new Date(Date.now() + HOUR));
  const theirs = await stranger.client().post(`/api/v1/send/${scheduled.id}/cancel`);
  expect(theirs.status).toBe(404);
  expect(theirs.body).toEqual({ ok: false, error: `no send with id ${scheduled.id}` });
  expect((await stranger.client().patch(`/api/v1/send/${scheduled.id}`).send({ send_at: null })).status).toBe(404);
  expect((await t.client().post('/api/v1/send/not-a-uuid/cancel')).status).toBe(404);
  expect((await row(scheduled.messages[0]!.id)).status).toBe('queued');
  // a bad time is a 400
  expect((await t.client().patch(`/api/v1/send/${scheduled.id}`).send({ send_at: 'soon' })).status).toBe(400);
  expect((await t.client().patch(`/api/v1/send/${scheduled.id}`).send({ send_at: new Date(Date.now() + 40 * 24 * HOUR).toISOString() })).status).toBe(400);
  expect((await t.client().patch(`/api/v1/send/${scheduled.id}`).send({})).status).toBe(400);
});

it('a reschedule moves the delivery: earlier goes out at the new time, later is not sent at the old one', async () => {
  const t = await tenant();
  // an hour ahead, moved to 2 s from now: it arrives then, not before
  const early = await send(t, 'sooner@example.org', new Date(Date.now() + HOUR));
  await waitFor(async () => (await queue(QUEUE.delivery).getJob(jobId.delivery(early.messages[0]!.id))) ?? null, { what: 'the delayed job' });
  const at = new Date(Date.now() + 2_000);
  const moved = await t.client().patch(`/api/v1/send/${early.id}`).send({ send_at: at.toISOString() });
  expect(moved.status).toBe(200);
  expect(moved.body.send).toMatchObject({ id: early.id, status: 'queued', send_at: at.toISOString() });
  const mail = await waitFor(() => sink.to('sooner@example.org')[0], { timeout: 20_000, what: 'the moved send on the wire' });
  // the row is marked sent once the SMTP answer is in: wait for the mark, not only for the mail
  const sentRow = await waitFor(async () => ((await row(early.messages[0]!.id)).status === 'sent' ? row(early.messages[0]!.id) : null), { timeout: 15_000, what: 'the sent mark' });
  expect(sentRow.sentAt!.getTime()).toBeGreaterThanOrEqual(at.getTime());
  // GET shows each copy's Message-ID, the one it went out with
  const got = await t.client().get(`/api/v1/send/${early.id}`);
  expect(got.body.messages[0].message_id).toBe(mail.parsed.messageId);
  expect(got.body.messages[0].message_id).toMatch(/^<[0-9a-f-]{36}@example\.com>$/);

  // 3 s ahead, moved an hour later: the job firing at the old time (forced here) finds it early and waits again
  const later = await send(t, 'later-still@example.org', new Date(Date.now() + 3_000));
  const laterId = later.messages[0]!.id;
  await waitFor(async () => (await queue(QUEUE.delivery).getJob(jobId.delivery(laterId))) ?? null, { what: 'the delayed job' });
  const pushed = await t.client().patch(`/api/v1/send/${later.id}`).send({ send_at: new Date(Date.now() + HOUR).toISOString() });
  expect(pushed.status).toBe(200);
  const job = (await queue(QUEUE.delivery).getJob(jobId.delivery(laterId)))!;
  // the delayed job was moved (BullMQ's changeDelay: from now), not left at its 3 s
  expect(job.delay).toBeGreaterThan(HOUR - 60_000);
  await job.promote();
  await waitFor(async () => ((await job.getState()) === 'delayed' && (await queue(QUEUE.delivery).getJob(jobId.delivery(laterId)))!.processedOn ? true : null), { timeout: 15_000, what: 'the job back to delayed' });
  expect(sink.to('later-still@example.org')).toHaveLength(0);
  expect((await row(laterId)).status).toBe('queued');
});
