import { db } from '../../apps/core/src/db';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { useApi } from '../helpers/api';
import { makeList, wantEvents } from '../helpers/factories';
import { activeRows, address, listFixture } from './support';

const ctx = useApi();

/** Adds that arrive together share one statement: each must still answer, count and announce as if alone. */
describe('the one-statement add (group commit)', () => {
  it('adds 60 concurrent new people to three lists: each active, counts exact, one subscriber.confirmed event each', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    await wantEvents(f.tenant.account.id);
    const lists = [f.list, await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: false }), await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: false })];
    const people = Array.from({ length: 60 }, (_, i) => ({ list: lists[i % 3]!.key, email: address('crowd'), name: `P${i}`, tags: 'a b', fields: { n: i } }));
    const answers = await Promise.all(people.map((p) => f.client.post('/api/v1/subscribers').send(p)));
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(people.map(() => [200, 'active']));
    for (const list of lists) {
      const row = await db().list.findUniqueOrThrow({ where: { id: list.id } });
      expect(row.subscriberCount).toBe(20);
      expect(await activeRows(list.id)).toBe(20);
    }
    const stored = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: lists[0]!.id, email: people[0]!.email } } });
    expect(stored).toMatchObject({ name: 'P0', tags: ['a', 'b'], fields: { n: 0 }, status: 'active' });
    expect(stored.confirmedAt).toBeInstanceOf(Date);
    const events = await db().event.findMany({ where: { accountId: f.tenant.account.id, type: 'subscriber.confirmed' } });
    expect(events).toHaveLength(60);
    expect(events.find((e) => (e.data as { email: string }).email === people[0]!.email)!.data).toEqual({ list: lists[0]!.key, email: people[0]!.email, status: 'active' });
  });

  it('answers the same person sent twice at once as active then exists, counting them once', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    await wantEvents(f.tenant.account.id);
    const email = address('twice');
    const answers = await Promise.all([f.subscribe({ email, name: 'A' }), f.subscribe({ email, name: 'B' }), f.subscribe({ email })]);
    expect(answers.map((a) => a.body.status).sort()).toEqual(['active', 'exists', 'exists']);
    expect(await f.count()).toBe(1);
    expect(await db().event.count({ where: { accountId: f.tenant.account.id, type: 'subscriber.confirmed' } })).toBe(1);
  });

  it('writes subscriber.confirmed only when an enabled endpoint of the account wants it', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const confirmed = () => db().event.count({ where: { accountId: f.tenant.account.id, type: 'subscriber.confirmed' } });
    expect((await f.subscribe({ email: address('nobody') })).body.status).toBe('active');
    expect(await confirmed()).toBe(0);
    const other = await wantEvents(f.tenant.account.id, ['message.sent']);
    expect((await f.subscribe({ email: address('other') })).body.status).toBe('active');
    expect(await confirmed()).toBe(0);
    const off = await wantEvents(f.tenant.account.id, ['subscriber.confirmed']);
    await db().webhook.update({ where: { id: off.id }, data: { enabled: false } });
    expect((await f.subscribe({ email: address('off') })).body.status).toBe('active');
    expect(await confirmed()).toBe(0);
    await db().webhook.update({ where: { id: other.id }, data: { events: ['*'] } });
    expect((await f.subscribe({ email: address('wanted') })).body.status).toBe('active');
    expect(await confirmed()).toBe(1);
    expect(await f.count()).toBe(4);
  });

  it('answers suppressed for a bounced address in a batch of adds, writing nothing for it', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const bounced = address('bounced');
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, bounced, 'bounced'));
    const others = Array.from({ length: 9 }, () => address('ok'));
    const answers = await Promise.all([bounced, ...others].map((email) => f.subscribe({ email })));
    expect(answers.map((a) => a.body.status)).toEqual(['suppressed', ...others.map(() => 'active')]);
    expect(await f.subscriber(bounced)).toBeNull();
    expect(await f.count()).toBe(9);
  });

  it('answers 404 for an unknown list inside a batch, and the rest of the batch is added', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const answers = await Promise.all([
      f.client.post('/api/v1/subscribers').send({ list: 'no-such-list', email: address() }),
      f.subscribe({ email: address() }),
      f.subscribe({ email: address() }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([404, 200, 200]);
    expect(answers[0]!.body).toEqual({ ok: false, error: 'no list with key "no-such-list"' });
    expect(await f.count()).toBe(2);
  });

  it('keeps counts exact with removals and re-adds racing the batched adds (no deadlock)', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const first = Array.from({ length: 20 }, () => address('race'));
    await Promise.all(first.map((email) => f.subscribe({ email })));
    const later = Array.from({ length: 20 }, () => address('race2'));
    const answers = await Promise.all([
      ...first.slice(0, 10).map((email) => f.unsubscribe({ email })),
      ...later.map((email) => f.subscribe({ email })),
      ...first.slice(10).map((email) => f.subscribe({ email, name: 'again' })),
    ]);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(await f.count()).toBe(30);
    expect(await activeRows(f.list.id)).toBe(30);
  });

  it('leaves a list that confirms, another account\'s list, and a person already on the list to the state machine', async () => {
    const f = await listFixture(ctx.api, { confirm: true });
    const other = await listFixture(ctx.api, { confirm: false });
    const email = address();
    const common = { name: '', tags: [], fields: {}, confirmed: false };
    expect(await ctx.api.state.adds.add({ accountId: f.tenant.account.id, listKey: f.list.key, email, ...common })).toBeNull();
    expect(await ctx.api.state.adds.add({ accountId: f.tenant.account.id, listKey: other.list.key, email, ...common })).toBe('no_list');
    expect(await ctx.api.state.adds.add({ accountId: f.tenant.account.id, listKey: f.list.key, email, ...common, confirmed: true })).toBe('active');
    expect(await ctx.api.state.adds.add({ accountId: f.tenant.account.id, listKey: f.list.key, email, ...common, confirmed: true })).toBeNull();
    expect(await f.count()).toBe(1);
  });
});
