import { db } from '../../apps/core/src/db';
import { QUEUE, queue } from '../../apps/core/src/queues';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addActive, broadcastTenant, waitStatus } from './support';

/**
 * A/B tests of broadcasts (docs/broadcasts.md), through the worker: the test share gets the variants first,
 * the test is judged `after_hours` later by the two-proportion test on the clicks its copies drew, and the rest gets
 * the winner, or the variants by weight when there is none.
 */
const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);

const variants = [
  { subject: 'Offer A for {{name}}', body: '<p>A: <a href="https://shop.example/a">shop</a></p>', weight: 1 },
  { subject: 'Offer B for {{name}}', body: '<p>B: <a href="https://shop.example/b">shop</a></p>', weight: 1 },
];

/** Starts an A/B broadcast to `people` readers, waits for its test share, and seeds the clicks each arm drew. */
async function testShareSent(people: number, clickShare: [number, number]) {
  const t = await broadcastTenant(sink.url);
  await addActive(t.listId, people);
  const created = await admin()
    .post('/admin/api/broadcasts')
    .send({ list: t.list.key, variants, winner: { metric: 'clicks', after_hours: 1, min_sample: 40 }, test_share: 0.4, track_clicks: true });
  expect(created.status).toBe(201);
  const id = created.body.broadcast.id as number;
  await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' }).expect(200);
  const b = await waitFor(async () => (await db().broadcast.findUniqueOrThrow({ where: { id } })).testSentAt, { timeout: 60_000, what: 'the test share written' });
  expect(b).toEqual(expect.any(Date));
  const copies = await db().message.findMany({ where: { broadcastId: id }, orderBy: { subscriberId: 'asc' } });
  for (const [variant, share] of clickShare.entries()) {
    const arm = copies.filter((c) => c.variant === variant);
    const clicked = arm.slice(0, Math.round(arm.length * share));
    await db().linkClick.createMany({ data: clicked.map((c) => ({ messageId: c.id, accountId: t.account.id, broadcastId: id, url: 'https://shop.example/x' })) });
  }
  return { t, id, copies };
}

/** The hour of waiting is over: the verdict is due, and the job waiting for it runs now. */
async function judgeNow(id: number) {
  await db().broadcast.update({ where: { id }, data: { testSentAt: new Date(Date.now() - 2 * 3_600_000) } });
  await waitFor(async () => (await queue(QUEUE.broadcast).getDelayed()).length > 0, { timeout: 30_000, what: 'the broadcast job waiting for its verdict' });
  for (const job of await queue(QUEUE.broadcast).getDelayed()) await job.promote();
}

it('sends the test share first, then the winner of a real difference to the rest', async () => {
  const { id, copies } = await testShareSent(300, [0.05, 0.45]);
  // about 40% of the audience, each copy with its variant's subject and html
  expect(copies.length).toBeGreaterThan(90);
  expect(copies.length).toBeLessThan(150);
  expect(new Set(copies.map((c) => c.variant))).toEqual(new Set([0, 1]));
  for (const c of copies) expect(c.subject).toMatch(c.variant === 0 ? /^Offer A for Reader \d+$/ : /^Offer B for Reader \d+$/);
  // each variant's own html, its link tracked
  expect(copies.find((c) => c.variant === 1)!.html).toMatch(/^<p>B: <a href="http[^"]+\/c\/[^"]+">shop<\/a><\/p>/);
  const waiting = (await admin().get(`/admin/api/broadcasts/${id}`).expect(200)).body.broadcast;
  expect(waiting.status).toBe('sending');
  expect(waiting.ab.verdict).toMatchObject({ winner: 'no winner', why: 'too early' });

  await judgeNow(id);
  await waitStatus(id, 'sent');
  const all = await db().message.findMany({ where: { broadcastId: id } });
  expect(all).toHaveLength(300);
  const rest = all.filter((m) => !copies.some((c) => c.id === m.id));
  expect(rest.length).toBe(300 - copies.length);
  expect(rest.every((m) => m.variant === 1 && m.subject.startsWith('Offer B'))).toBe(true);
  const got = (await admin().get(`/admin/api/broadcasts/${id}`).expect(200)).body.broadcast;
  expect(got.ab.verdict).toEqual({ winner: 1, p: expect.any(Number) });
  expect(got.ab.verdict.p).toBeLessThan(0.05);
  expect(got.ab.variants[1]).toMatchObject({ variant: 1, subject: variants[1]!.subject, weight: 1, sent: 300 - copies.filter((c) => c.variant === 0).length });
  // what reached the wire
  await waitFor(async () => sink.messages.length >= 300 || null, { timeout: 60_000, what: 'every copy delivered' });
  expect(sink.messages.filter((m) => /^Offer B/.test(m.parsed.subject ?? '')).length).toBe(got.ab.variants[1].sent);
});

it('reports "no winner" without a real difference, and the rest gets the variants by weight', async () => {
  const { id, copies } = await testShareSent(300, [0.2, 0.22]);
  await judgeNow(id);
  await waitStatus(id, 'sent');
  const got = (await admin().get(`/admin/api/broadcasts/${id}`).expect(200)).body.broadcast;
  expect(got.ab.verdict).toMatchObject({ winner: 'no winner', why: 'no significant difference' });
  expect(got.ab.verdict.p).toBeGreaterThan(0.05);
  const rest = (await db().message.findMany({ where: { broadcastId: id } })).filter((m) => !copies.some((c) => c.id === m.id));
  expect(new Set(rest.map((m) => m.variant))).toEqual(new Set([0, 1]));
});

it('refuses, 400 naming why: weights summing to 0, a winner by opens, variants beside a subject, a test share without a winner', async () => {
  const t = await broadcastTenant(sink.url);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ variants: variants.map((v) => ({ ...v, weight: 0 })) }, /weights must sum to a positive number/],
    [{ variants, winner: { metric: 'opens', after_hours: 1, min_sample: 10 } }, /replies or clicks; opens cannot pick a winner/],
    [{ variants, subject: 'Mine' }, /subject/],
    [{ variants, test_share: 0.2 }, /test_share: give a winner rule/],
    [{ variants, winner: { metric: 'clicks', after_hours: 1, min_sample: 10 }, test_share: 1.5, track_clicks: true }, /test_share/],
    [{ variants, winner: { metric: 'clicks', after_hours: 1, min_sample: 10 } }, /a winner by clicks needs track_clicks/],
  ];
  for (const [body, why] of cases) {
    const res = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, ...body });
    expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: expect.stringMatching(why) });
  }
  expect(await db().broadcast.count({ where: { accountId: t.account.id } })).toBe(0);
});
