import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';
import { activeRows, address, confirmationMessages, listFixture } from './support';

const ctx = useApi();

describe('POST /api/v1/subscribers: statuses and transitions (docs/api.md, docs/api.md)', () => {
  it('adds a new person as pending on a confirm list, writes one confirmation email and does not count them yet', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    const res = await f.subscribe({ email, name: 'Ada' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, status: 'pending' });
    expect((await f.subscriber(email))?.status).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(1);
    expect(await f.count()).toBe(0);
  });

  it('adds a new person as active with confirmed=true, without any email, and counts them', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    const res = await f.subscribe({ email, confirmed: true });
    expect(res.body).toEqual({ ok: true, status: 'active' });
    expect(await confirmationMessages(email)).toHaveLength(0);
    expect(await f.count()).toBe(1);
  });

  it('adds a new person as active on a list that does not need confirmation', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address();
    expect((await f.subscribe({ email })).body.status).toBe('active');
    expect(await confirmationMessages(email)).toHaveLength(0);
    expect(await f.count()).toBe(1);
  });

  it('answers pending again for a pending person without re-sending within the hour', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email });
    expect((await f.subscribe({ email })).body.status).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(1);
  });

  it('re-sends the confirmation to a pending person once the last one is an hour old', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email });
    await db().subscriber.update({ where: { listId_email: { listId: f.list.id, email } }, data: { confirmationSentAt: new Date(Date.now() - 3_600_001) } });
    expect((await f.subscribe({ email })).body.status).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(2);
    expect((await f.subscribe({ email })).body.status).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(2);
  });

  it('moves a pending person to active when added again with confirmed=true, counting them once', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email });
    expect((await f.subscribe({ email, confirmed: true })).body.status).toBe('active');
    expect(await f.count()).toBe(1);
    expect((await f.subscribe({ email, confirmed: true })).body.status).toBe('exists');
    expect(await f.count()).toBe(1);
  });

  it('answers exists for an active person and merges name, tags and fields', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true, name: 'Ada', tags: 'a b', fields: { plan: 'free', seats: 1 } });
    const res = await f.subscribe({ email, name: 'Ada Lovelace', tags: ['b', 'c'], fields: { plan: 'pro', vip: true } });
    expect(res.body).toEqual({ ok: true, status: 'exists' });
    const row = await f.subscriber(email);
    expect(row?.name).toBe('Ada Lovelace');
    expect([...row!.tags].sort()).toEqual(['a', 'b', 'c']);
    expect(row?.fields).toEqual({ plan: 'pro', seats: 1, vip: true });
    expect(await f.count()).toBe(1);
  });

  it('keeps the old name when a repeated add sends none', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true, name: 'Ada' });
    await f.subscribe({ email, tags: 'x' });
    expect((await f.subscriber(email))?.name).toBe('Ada');
  });

  it('answers gone for a person who unsubscribed, and does not add them back', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    expect((await f.unsubscribe({ email })).body.status).toBe('unsubscribed');
    const res = await f.subscribe({ email, confirmed: true, name: 'Back' });
    expect(res.body).toEqual({ ok: true, status: 'gone' });
    const row = await f.subscriber(email);
    expect(row?.status).toBe('unsubscribed');
    expect(row?.name).toBe('');
    expect(await f.count()).toBe(0);
  });

  it('answers suppressed, stores nothing and sends nothing for an address on the account suppression list', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await db().suppression.create({ data: { accountId: f.tenant.account.id, email, reason: 'bounced' } });
    expect((await f.subscribe({ email })).body).toEqual({ ok: true, status: 'suppressed' });
    expect((await f.subscribe({ email, confirmed: true })).body.status).toBe('suppressed');
    expect(await f.subscriber(email)).toBeNull();
    expect(await confirmationMessages(email)).toHaveLength(0);
    expect(await f.count()).toBe(0);
  });

  it.each(['bounced', 'complained'] as const)('answers suppressed when the address %s on another list of the account', async (status) => {
    const f = await listFixture(ctx.api);
    const other = await makeList(f.tenant.account.id, f.tenant.mailbox.id);
    const email = address();
    await db().subscriber.create({ data: { listId: other.id, email, status } });
    expect((await f.subscribe({ email })).body.status).toBe('suppressed');
    expect(await confirmationMessages(email)).toHaveLength(0);
  });

  it('answers suppressed for a subscriber of this list who bounced', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await db().subscriber.create({ data: { listId: f.list.id, email, status: 'complained' } });
    expect((await f.subscribe({ email, confirmed: true })).body.status).toBe('suppressed');
  });

  it('does not let another account\'s bounce suppress the address', async () => {
    const f = await listFixture(ctx.api);
    const stranger = await makeTenant();
    const email = address();
    await db().suppression.create({ data: { accountId: stranger.account.id, email, reason: 'complained' } });
    expect((await f.subscribe({ email })).body.status).toBe('pending');
  });

  it('compares emails case-insensitively and stores them trimmed and lower-cased', async () => {
    const f = await listFixture(ctx.api);
    const email = address('MiXeD');
    expect((await f.subscribe({ email: `  ${email.toUpperCase()}  `, confirmed: true })).body.status).toBe('active');
    expect((await f.subscribe({ email: email.toLowerCase() })).body.status).toBe('exists');
    const rows = await db().subscriber.findMany({ where: { listId: f.list.id } });
    expect(rows.map((r) => r.email)).toEqual([email.toLowerCase()]);
    expect((await f.unsubscribe({ email: email.toUpperCase() })).body.status).toBe('unsubscribed');
  });

  it('answers 404 for an unknown list', async () => {
    const f = await listFixture(ctx.api);
    const res = await f.client.post('/api/v1/subscribers').send({ list: 'no-such-list', email: address() });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('no list') });
  });

  it('answers 404 for another account\'s list, on add and on delete, and changes nothing there', async () => {
    const mine = await listFixture(ctx.api);
    const theirs = await listFixture(ctx.api);
    const email = address();
    const add = await mine.client.post('/api/v1/subscribers').send({ list: theirs.list.key, email, confirmed: true });
    expect(add.status).toBe(404);
    const remove = await mine.client.delete('/api/v1/subscribers').send({ list: theirs.list.key, email });
    expect(remove.status).toBe(404);
    expect(await theirs.subscriber(email)).toBeNull();
  });

  it('gives one subscriber row and one count for 10 simultaneous adds of the same person', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    const answers = await Promise.all(Array.from({ length: 10 }, () => f.subscribe({ email, confirmed: true })));
    const statuses = answers.map((a) => a.body.status).sort();
    expect(statuses).toEqual(['active', ...Array(9).fill('exists')]);
    expect(await f.count()).toBe(1);
  });

  it('gives one confirmation email for 10 simultaneous adds of the same pending person', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    const answers = await Promise.all(Array.from({ length: 10 }, () => f.subscribe({ email })));
    expect(answers.every((a) => a.body.status === 'pending')).toBe(true);
    expect(await confirmationMessages(email)).toHaveLength(1);
  });
});

describe('DELETE /api/v1/subscribers', () => {
  it('unsubscribes an active person and takes them off the count', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    expect(await f.count()).toBe(1);
    const res = await f.unsubscribe({ email });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, status: 'unsubscribed' });
    const row = await f.subscriber(email);
    expect(row?.status).toBe('unsubscribed');
    expect(row?.unsubscribedAt).toBeInstanceOf(Date);
    expect(await f.count()).toBe(0);
  });

  it('unsubscribes a pending person without touching the count', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email });
    expect((await f.unsubscribe({ email })).body.status).toBe('unsubscribed');
    expect(await f.count()).toBe(0);
  });

  it('answers gone for a person who already left', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    await f.unsubscribe({ email });
    expect((await f.unsubscribe({ email })).body).toEqual({ ok: true, status: 'gone' });
    expect(await f.count()).toBe(0);
  });

  it('answers absent for an address not on the list', async () => {
    const f = await listFixture(ctx.api);
    expect((await f.unsubscribe({ email: address() })).body).toEqual({ ok: true, status: 'absent' });
  });

  it('accepts list and email as query parameters for clients that drop DELETE bodies', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    const res = await f.client.delete(`/api/v1/subscribers?list=${f.list.key}&email=${encodeURIComponent(email)}`);
    expect(res.body).toEqual({ ok: true, status: 'unsubscribed' });
  });

  it('answers 400 naming the field for a missing or malformed email', async () => {
    const f = await listFixture(ctx.api);
    const missing = await f.unsubscribe({});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/email/);
    const bad = await f.unsubscribe({ email: 'not-an-address' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/email/);
  });

  it('keeps the count exact through simultaneous adds and unsubscribes', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const people = Array.from({ length: 12 }, () => address());
    await Promise.all(people.map((email) => f.subscribe({ email })));
    await Promise.all([
      ...people.slice(0, 6).map((email) => f.unsubscribe({ email })),
      ...people.slice(0, 6).map((email) => f.unsubscribe({ email })),
      ...people.slice(6).map((email) => f.subscribe({ email })),
    ]);
    expect(await f.count()).toBe(6);
    expect(await activeRows(f.list.id)).toBe(6);
  });
});
