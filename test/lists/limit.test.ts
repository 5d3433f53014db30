import { redis } from '../../apps/core/src/redis';
import { windowKey, WINDOW_MS } from '../../apps/core/src/subscribers/limit';
import { db } from '../../apps/core/src/db';
import { addSubscriber, requireAccountList } from '../../apps/core/src/subscribers';
import { useApi } from '../helpers/api';
import { makeList } from '../helpers/factories';
import { address, listFixture } from './support';

const ctx = useApi();

/** Fills the list's API window with `count` earlier reservations, the oldest `oldestAgoMs` ago. */
async function seedWindow(listKey: string, count: number, oldestAgoMs = 600_000) {
  const now = Date.now();
  const args: (string | number)[] = [];
  for (let i = 0; i < count; i++) args.push(now - oldestAgoMs + Math.floor((i * oldestAgoMs) / Math.max(1, count)), `seed-${i}`);
  if (args.length) await redis().zadd(windowKey(listKey, 'api'), ...args);
}

const slotsTaken = (listKey: string) => redis().zcard(windowKey(listKey, 'api'));

describe('600 new subscribers per list per rolling hour through the API', () => {
  it('accepts the 600th new person and refuses the 601st with 429 and Retry-After, taking no slot for it', async () => {
    const f = await listFixture(ctx.api);
    await seedWindow(f.list.key, 599, 1_800_000);
    const sixHundredth = await f.subscribe({ email: address() });
    expect(sixHundredth.status).toBe(200);
    expect(sixHundredth.body.status).toBe('pending');
    const email = address();
    const refused = await f.subscribe({ email, confirmed: true });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ ok: false, error: expect.stringContaining('600') });
    // the oldest reservation is 30 minutes old: it leaves the window in about 30 minutes
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(1790);
    expect(retryAfter).toBeLessThanOrEqual(1800);
    expect(await f.subscriber(email)).toBeNull();
    expect(await slotsTaken(f.list.key)).toBe(600);
    expect((await f.subscribe({ email: address() })).status).toBe(429);
    expect(await slotsTaken(f.list.key)).toBe(600);
  });

  it('still answers exists, gone, suppressed and pending-again when the window is full', async () => {
    const f = await listFixture(ctx.api);
    const [active, pending, gone, suppressed] = [address(), address(), address(), address()];
    await f.subscribe({ email: active, confirmed: true });
    await f.subscribe({ email: pending });
    await f.subscribe({ email: gone, confirmed: true });
    await f.unsubscribe({ email: gone });
    await db().suppression.create({ data: { accountId: f.tenant.account.id, email: suppressed, reason: 'complained' } });
    await seedWindow(f.list.key, 600 - (await slotsTaken(f.list.key)));
    expect((await f.subscribe({ email: address() })).status).toBe(429);
    expect((await f.subscribe({ email: active })).body).toEqual({ ok: true, status: 'exists' });
    expect((await f.subscribe({ email: pending })).body).toEqual({ ok: true, status: 'pending' });
    expect((await f.subscribe({ email: gone })).body).toEqual({ ok: true, status: 'gone' });
    expect((await f.unsubscribe({ email: active })).body).toEqual({ ok: true, status: 'unsubscribed' });
    // an address on the suppression list is not a new person: the full window does not stop its answer
    expect((await f.subscribe({ email: suppressed })).body).toEqual({ ok: true, status: 'suppressed' });
    expect(await slotsTaken(f.list.key)).toBe(600);
    expect((await f.subscribe({ email: pending, confirmed: true })).body).toEqual({ ok: true, status: 'active' });
  });

  it('does not count exists, gone or suppressed answers', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    expect(await slotsTaken(f.list.key)).toBe(1);
    for (let i = 0; i < 5; i++) expect((await f.subscribe({ email })).body.status).toBe('exists');
    await f.unsubscribe({ email });
    expect((await f.subscribe({ email })).body.status).toBe('gone');
    const suppressed = address();
    await db().suppression.create({ data: { accountId: f.tenant.account.id, email: suppressed, reason: 'bounced' } });
    expect((await f.subscribe({ email: suppressed })).body.status).toBe('suppressed');
    expect(await slotsTaken(f.list.key)).toBe(1);
  });

  it('gives back the extra slots when simultaneous requests add the same new person', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    const answers = await Promise.all(Array.from({ length: 10 }, () => f.subscribe({ email, confirmed: true })));
    expect(answers.map((a) => a.body.status).filter((s) => s === 'active')).toHaveLength(1);
    expect(await slotsTaken(f.list.key)).toBe(1);
  });

  it('lets exactly the remaining 15 of 30 simultaneous new people in at the boundary', async () => {
    const f = await listFixture(ctx.api);
    await seedWindow(f.list.key, 585);
    const people = Array.from({ length: 30 }, () => address());
    const answers = await Promise.all(people.map((email) => f.subscribe({ email, confirmed: true })));
    const accepted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(accepted).toHaveLength(15);
    expect(refused).toHaveLength(15);
    expect(accepted.every((a) => a.body.status === 'active')).toBe(true);
    expect(refused.every((a) => Number(a.headers['retry-after']) > 0)).toBe(true);
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(15);
    expect(await f.count()).toBe(15);
    expect(await slotsTaken(f.list.key)).toBe(600);
  });

  it('lets in exactly 1 of 30 simultaneous new people when one slot is left', async () => {
    const f = await listFixture(ctx.api);
    await seedWindow(f.list.key, 599);
    const answers = await Promise.all(Array.from({ length: 30 }, () => f.subscribe({ email: address() })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(29);
    expect(await slotsTaken(f.list.key)).toBe(600);
  });

  it('rolls: reservations older than an hour no longer count', async () => {
    const f = await listFixture(ctx.api);
    const now = Date.now();
    const args: (string | number)[] = [];
    for (let i = 0; i < 600; i++) args.push(now - WINDOW_MS - 1000 - i, `old-${i}`);
    await redis().zadd(windowKey(f.list.key, 'api'), ...args);
    expect((await f.subscribe({ email: address() })).status).toBe(200);
    expect(await slotsTaken(f.list.key)).toBe(1);
  });

  it('counts per list: a full list does not hold back another list of the account', async () => {
    const f = await listFixture(ctx.api);
    const other = await makeList(f.tenant.account.id, f.tenant.mailbox.id);
    await seedWindow(f.list.key, 600);
    expect((await f.subscribe({ email: address() })).status).toBe(429);
    const res = await f.client.post('/api/v1/subscribers').send({ list: other.key, email: address() });
    expect(res.status).toBe(200);
  });

  it('does not count failed requests: a 400 or a 404 takes no slot', async () => {
    const f = await listFixture(ctx.api);
    // each refused for the reason meant, not for another (a 500 would pass a slot count just as well)
    const badAddress = await f.subscribe({ email: 'not-an-address' });
    expect(badAddress.status).toBe(400);
    expect(badAddress.body).toEqual({ ok: false, error: expect.any(String) });
    const longName = await f.subscribe({ email: address(), name: 'n'.repeat(201) });
    expect(longName.status).toBe(400);
    expect(longName.body.ok).toBe(false);
    const noList = await f.client.post('/api/v1/subscribers').send({ list: 'nope', email: address() });
    expect(noList.status).toBe(404);
    expect(noList.body.ok).toBe(false);
    expect(await slotsTaken(f.list.key)).toBe(0);
  });

  it('gives the slot back when the add fails after taking it', async () => {
    const f = await listFixture(ctx.api);
    const list = await requireAccountList(db(), f.tenant.account.id, f.list.key);
    // a list row that is gone by the time the subscriber is written: the insert fails on its foreign key
    const vanished = { ...list, id: 2_000_000_000 };
    await expect(addSubscriber(db(), vanished, { email: address() }, 'api')).rejects.toThrow(/foreign key/i);
    expect(await slotsTaken(vanished.key)).toBe(0);
  });
});
