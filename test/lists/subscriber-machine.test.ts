import { db } from '../../apps/core/src/db';
import { consentRows } from '../../apps/core/src/consent/repository';
import { jobId, queue, QUEUE } from '../../apps/core/src/queues';
import { redis } from '../../apps/core/src/redis';
import { addSubscriber, addSubscriberByKey, findListByKey, importSubscriber, removeSubscriber, requireAccountList } from '../../apps/core/src/subscribers';
import { FastAdds } from '../../apps/core/src/subscribers/fast-add';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { windowKey } from '../../apps/core/src/subscribers/limit';
import { TAGS_MAX, FIELDS_MAX } from '../../apps/core/src/subscribers/schema';
import { makeList, makeTenant } from '../helpers/factories';
import { address, confirmationMessages } from './support';

/**
 * The subscriber state machine (subscribers/machine.ts) called as its callers call it (the hosted form, an import, the
 * API's transaction path, bounce handling): what each add writes to the row, the consent ledger, the count and the
 * hourly window, against the real database and Redis.
 */
// the delivery queue's connection made before the first add: its job is then in Redis within the add's deadline
beforeAll(() => queue(QUEUE.delivery).waitUntilReady());

async function fixture(confirm: boolean) {
  const tenant = await makeTenant();
  const made = await makeList(tenant.account.id, tenant.mailbox.id, { confirm });
  const list = await requireAccountList(db(), tenant.account.id, made.key);
  const row = (email: string) => db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: list.id, email } } });
  const ledger = async (email: string) => (await consentRows(db(), (await row(email)).id)).map((r) => ({ kind: r.kind, source: r.source, ip: r.ip, detail: r.detail }));
  const count = async () => (await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount;
  const slots = (channel: 'api' | 'form') => redis().zcard(windowKey(list.key, channel));
  return { tenant, list, row, ledger, count, slots };
}

describe('the hosted form', () => {
  it('always asks for confirmation, even on a list that does not, and keeps the ticked topics in the row and the ledger', async () => {
    const f = await fixture(false);
    const email = address('form');
    const topics = { news: true, offers: false };
    expect(await addSubscriber(db(), f.list, { email, name: 'Fay', topics }, 'form', { source: 'form', ip: '192.0.2.7', formText: 'Join us' })).toBe('pending');
    expect(await f.row(email)).toMatchObject({ status: 'pending', name: 'Fay', topics, confirmedAt: null });
    expect(await f.ledger(email)).toEqual([{ kind: 'subscribe', source: 'form', ip: '192.0.2.7', detail: { topics, status: 'pending' } }]);
    expect(await f.count()).toBe(0);
    // the form's own window took the slot, not the API's
    expect([await f.slots('form'), await f.slots('api')]).toEqual([1, 0]);
    // the confirmation email is written and handed to the queue at once
    const [message] = await confirmationMessages(email);
    expect(message).toMatchObject({ to: email, kind: 'confirmation', mailboxId: f.list.mailboxId, accountId: f.list.accountId, subscriberId: (await f.row(email)).id });
    expect(message!.messageIdHeader).toMatch(new RegExp(`@${f.list.mailbox.address.split('@')[1]!.replace(/[.]/g, '\\.')}>$`));
    expect(message!.enqueuedAt).not.toBeNull();
    expect(await queue(QUEUE.delivery).getJob(jobId.delivery(message!.id))).toMatchObject({ data: { messageId: message!.id } });
  });

  it('never rewrites what is stored about a person already on the list, and a consent without a source is the form', async () => {
    const f = await fixture(false);
    const email = address('kept');
    expect(await addSubscriber(db(), f.list, { email, name: 'Gus', tags: ['vip'], fields: { plan: 'pro' } }, 'api')).toBe('active');
    expect(await addSubscriber(db(), f.list, { email, name: 'Mallory', tags: ['spam'], fields: { plan: 'free' } }, 'form')).toBe('exists');
    expect(await f.row(email)).toMatchObject({ name: 'Gus', tags: ['vip'], fields: { plan: 'pro' } });
    const other = address('formdefault');
    await addSubscriber(db(), f.list, { email: other }, 'form');
    expect((await f.ledger(other))[0]).toMatchObject({ kind: 'subscribe', source: 'form', detail: { status: 'pending' } });
    expect((await f.ledger(email))[0]).toMatchObject({ kind: 'subscribe', source: 'api_key', detail: { status: 'active' } });
  });
});

describe('an add through the transaction', () => {
  it('an active add records who asked, counts once and frees no slot; a known person takes no slot at all', async () => {
    const f = await fixture(false);
    const email = address('active');
    expect(await addSubscriber(db(), f.list, { email, name: 'Hal', tags: ['a', 'a', 'b'] }, 'api', { source: 'api_key', ip: '198.51.100.1' }, { key: 42 })).toBe('active');
    const stored = await f.row(email);
    expect(stored).toMatchObject({ status: 'active', name: 'Hal', tags: ['a', 'b'], fields: {}, topics: {} });
    expect(stored.confirmedAt).toBeInstanceOf(Date);
    expect(await f.ledger(email)).toEqual([{ kind: 'subscribe', source: 'api_key', ip: '198.51.100.1', detail: { key: 42, status: 'active' } }]);
    expect(await f.count()).toBe(1);
    expect(await f.slots('api')).toBe(1);
    expect(await confirmationMessages(email)).toEqual([]);
    expect(await addSubscriber(db(), f.list, { email }, 'api')).toBe('exists');
    expect(await f.slots('api')).toBe(1);
    expect(await f.count()).toBe(1);
  });

  it('a person given with their address alone is stored without a name, tags or fields', async () => {
    const f = await fixture(false);
    const email = address('bare');
    expect(await addSubscriber(db(), f.list, { email }, 'api')).toBe('active');
    expect(await f.row(email)).toMatchObject({ status: 'active', name: '', tags: [], fields: {}, topics: {} });
  });

  it('an empty name leaves the stored one, and no topic ticked writes no topics to the ledger', async () => {
    const f = await fixture(false);
    const email = address('named');
    expect(await addSubscriber(db(), f.list, { email, name: 'Ann', topics: {} }, 'api')).toBe('active');
    expect(await addSubscriber(db(), f.list, { email, name: '' }, 'api')).toBe('exists');
    expect((await f.row(email)).name).toBe('Ann');
    expect(await f.ledger(email)).toEqual([{ kind: 'subscribe', source: 'api_key', ip: '', detail: { status: 'active' } }]);
  });

  it('a pending person added again as confirmed: active, counted once, a confirm row with the merged data', async () => {
    const f = await fixture(true);
    const email = address('pending');
    expect(await addSubscriber(db(), f.list, { email, name: 'Ida', tags: ['x'] }, 'api', { source: 'api_key' }, { key: 1 })).toBe('pending');
    expect(await f.count()).toBe(0);
    expect(await confirmationMessages(email)).toHaveLength(1);
    expect(await addSubscriber(db(), f.list, { email, name: 'Ida B', tags: ['y'], confirmed: true }, 'api', { source: 'api_key', ip: '203.0.113.9' }, { key: 2 })).toBe('active');
    const stored = await f.row(email);
    expect(stored).toMatchObject({ status: 'active', name: 'Ida B', tags: ['x', 'y'] });
    expect(stored.confirmedAt).toBeInstanceOf(Date);
    expect(await f.ledger(email)).toEqual([
      { kind: 'subscribe', source: 'api_key', ip: '', detail: { key: 1, status: 'pending' } },
      { kind: 'confirm', source: 'api_key', ip: '203.0.113.9', detail: { key: 2, status: 'active' } },
    ]);
    expect(await f.count()).toBe(1);
    // the slot the first add took stays; the second, of a known person, took none
    expect(await f.slots('api')).toBe(1);
    expect(await addSubscriber(db(), f.list, { email, confirmed: true }, 'api')).toBe('exists');
    expect(await f.count()).toBe(1);
  });

  it('a pending person added again unconfirmed gets the confirmation again only once the last is an hour old', async () => {
    const f = await fixture(true);
    const email = address('again');
    await addSubscriber(db(), f.list, { email }, 'api');
    expect(await addSubscriber(db(), f.list, { email, name: 'Jo' }, 'api')).toBe('pending');
    expect(await confirmationMessages(email)).toHaveLength(1);
    expect((await f.row(email)).name).toBe('Jo');
    // exactly an hour: due
    const sent = (await f.row(email)).confirmationSentAt!;
    await db().subscriber.update({ where: { id: (await f.row(email)).id }, data: { confirmationSentAt: new Date(sent.getTime() - 3_600_000) } });
    expect(await addSubscriber(db(), f.list, { email }, 'api')).toBe('pending');
    const messages = await confirmationMessages(email);
    expect(messages).toHaveLength(2);
    expect(messages[1]!.enqueuedAt).not.toBeNull();
    expect((await f.ledger(email)).map((r) => r.kind)).toEqual(['subscribe']);
  });

  it('an unsubscribed person is gone and a bounced or complained one suppressed, each unchanged and taking no slot', async () => {
    const f = await fixture(false);
    const left = address('left');
    const bounced = address('bounced');
    const complained = address('complained');
    for (const email of [left, bounced, complained]) await addSubscriber(db(), f.list, { email, name: 'Old' }, 'api');
    expect(await removeSubscriber(db(), f.list, left)).toBe('unsubscribed');
    await db().subscriber.update({ where: { id: (await f.row(bounced)).id }, data: { status: 'bounced' } });
    await db().subscriber.update({ where: { id: (await f.row(complained)).id }, data: { status: 'complained' } });
    const slots = await f.slots('api');
    expect(await addSubscriber(db(), f.list, { email: left, name: 'New' }, 'api')).toBe('gone');
    expect(await addSubscriber(db(), f.list, { email: bounced, name: 'New' }, 'api')).toBe('suppressed');
    expect(await addSubscriber(db(), f.list, { email: complained, name: 'New' }, 'api')).toBe('suppressed');
    expect([(await f.row(left)).status, (await f.row(bounced)).status, (await f.row(complained)).status]).toEqual(['unsubscribed', 'bounced', 'complained']);
    expect([(await f.row(left)).name, (await f.row(bounced)).name, (await f.row(complained)).name]).toEqual(['Old', 'Old', 'Old']);
    expect(await f.slots('api')).toBe(slots);
  });

  it('a repeated add keeps the request tags and fields first when the union passes the limits', async () => {
    const f = await fixture(false);
    const email = address('full');
    const oldTags = Array.from({ length: TAGS_MAX }, (_, i) => `old${i}`);
    const oldFields = Object.fromEntries(Array.from({ length: FIELDS_MAX }, (_, i) => [`f${i}`, i]));
    await addSubscriber(db(), f.list, { email, tags: oldTags, fields: oldFields }, 'api');
    expect(await addSubscriber(db(), f.list, { email, tags: ['new1', 'old3', 'new1'], fields: { g: 'x', f2: 'two' } }, 'api')).toBe('exists');
    const stored = await f.row(email);
    expect(stored.tags).toEqual([...oldTags.filter((t) => t !== 'old3').slice(0, TAGS_MAX - 2), 'new1', 'old3']);
    expect(stored.fields).toEqual({ ...Object.fromEntries(Object.entries(oldFields).filter(([k]) => k !== 'f2').slice(0, FIELDS_MAX - 2)), g: 'x', f2: 'two' });
    // more given than the limit leaves none of the old
    await addSubscriber(db(), f.list, { email, tags: Array.from({ length: TAGS_MAX + 1 }, (_, i) => `n${i}`) }, 'api');
    expect((await f.row(email)).tags).toEqual(Array.from({ length: TAGS_MAX + 1 }, (_, i) => `n${i}`));
    // an add with no name, tags or fields changes nothing
    await addSubscriber(db(), f.list, { email, name: '', tags: [], fields: {} }, 'api');
    expect((await f.row(email)).tags).toHaveLength(TAGS_MAX + 1);
    expect(Object.keys((await f.row(email)).fields as object)).toHaveLength(FIELDS_MAX);
  });
});

describe("the API's add by list key", () => {
  it('writes a new person through the one statement with their name, tags and fields, taking one slot; a person already there takes none', async () => {
    const f = await fixture(false);
    const adds = new FastAdds(db());
    const email = address('by-key');
    expect(await addSubscriberByKey(db(), adds, f.tenant.account.id, f.list.key, { email, name: 'Kay', tags: ['a', 'b', 'a'], fields: { plan: 'pro' } })).toBe('active');
    expect(await f.row(email)).toMatchObject({ status: 'active', name: 'Kay', tags: ['a', 'b'], fields: { plan: 'pro' } });
    expect(await f.slots('api')).toBe(1);
    expect(await f.count()).toBe(1);
    expect(await addSubscriberByKey(db(), adds, f.tenant.account.id, f.list.key, { email, tags: ['c'] })).toBe('exists');
    expect(await f.slots('api')).toBe(1);
    expect(await f.count()).toBe(1);
  });
});

describe('the operator import', () => {
  it('writes an import row, takes no slot of the hourly window, and asks a confirm list for confirmation', async () => {
    const f = await fixture(true);
    const email = address('imported');
    expect(await importSubscriber(db(), f.list, { email, name: 'Kim', tags: ['csv'] })).toBe('pending');
    expect(await f.ledger(email)).toEqual([{ kind: 'import', source: 'import', ip: '', detail: { status: 'pending' } }]);
    expect(await confirmationMessages(email)).toHaveLength(1);
    const confirmed = address('imported-confirmed');
    expect(await importSubscriber(db(), f.list, { email: confirmed, confirmed: true })).toBe('active');
    expect((await f.ledger(confirmed))[0]).toEqual({ kind: 'import', source: 'import', ip: '', detail: { status: 'active' } });
    expect(await f.count()).toBe(1);
    expect([await f.slots('api'), await f.slots('form')]).toEqual([0, 0]);
  });

  it('an address suppressed in the account is not imported', async () => {
    const f = await fixture(false);
    const email = address('imported-suppressed');
    await db().suppression.create({ data: { accountId: f.tenant.account.id, email, reason: 'bounced' } });
    expect(await importSubscriber(db(), f.list, { email, confirmed: true })).toBe('suppressed');
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: f.list.id, email } } })).toBeNull();
    expect(await f.count()).toBe(0);
  });
});

describe('removals and suppressions', () => {
  it('absent, gone, or unsubscribed with what the person was; only an active one leaves the count', async () => {
    const f = await fixture(true);
    // an endpoint that wants the event, so that it is written (events/index.ts: only if wanted)
    await db().webhook.create({ data: { accountId: f.tenant.account.id, url: 'https://hooks.example.com/leaves', events: ['subscriber.unsubscribed'], secretEnc: 'x' } });
    const pending = address('pending-leaves');
    const active = address('active-leaves');
    await addSubscriber(db(), f.list, { email: pending }, 'api');
    await addSubscriber(db(), f.list, { email: active, confirmed: true }, 'api');
    expect(await f.count()).toBe(1);
    expect(await removeSubscriber(db(), f.list, address('never'))).toBe('absent');
    expect(await removeSubscriber(db(), f.list, pending, { source: 'one_click', ip: '192.0.2.1' })).toBe('unsubscribed');
    expect(await f.count()).toBe(1);
    expect(await removeSubscriber(db(), f.list, active)).toBe('unsubscribed');
    expect(await f.count()).toBe(0);
    expect((await f.row(pending)).unsubscribedAt).toBeInstanceOf(Date);
    expect((await f.ledger(pending)).at(-1)).toEqual({ kind: 'unsubscribe', source: 'one_click', ip: '192.0.2.1', detail: { was: 'pending' } });
    expect((await f.ledger(active)).at(-1)).toEqual({ kind: 'unsubscribe', source: 'api_key', ip: '', detail: { was: 'active' } });
    expect(await removeSubscriber(db(), f.list, active)).toBe('gone');
    expect(await f.count()).toBe(0);
    // each move to unsubscribed is one subscriber.unsubscribed event (the second removal, gone, none)
    const events = await db().event.findMany({ where: { accountId: f.tenant.account.id, type: 'subscriber.unsubscribed' }, orderBy: { createdAt: 'asc' } });
    expect(events.map((e) => e.data)).toEqual([
      { list: f.list.key, email: pending, status: 'unsubscribed' },
      { list: f.list.key, email: active, status: 'unsubscribed' },
    ]);
  });

  it('a suppression moves pending and active subscriptions, writes a ledger row each, and counts only the active', async () => {
    const f = await fixture(true);
    const second = await requireAccountList(db(), f.tenant.account.id, (await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: true })).key);
    const email = address('suppressed');
    await addSubscriber(db(), f.list, { email, confirmed: true }, 'api');
    await addSubscriber(db(), second, { email }, 'api');
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, `  ${email.toUpperCase()} `, 'bounced', 'mailbox unknown', 'user_unknown'));
    expect(await f.count()).toBe(0);
    expect((await db().list.findUniqueOrThrow({ where: { id: second.id } })).subscriberCount).toBe(0);
    const rows = await db().subscriber.findMany({ where: { email }, orderBy: { listId: 'asc' } });
    expect(rows.map((r) => r.status)).toEqual(['bounced', 'bounced']);
    for (const r of rows) {
      expect((await consentRows(db(), r.id)).at(-1)).toMatchObject({ kind: 'suppression', source: 'mail', detail: { reason: 'bounced', detail: 'mailbox unknown' } });
    }
    expect(await db().suppression.findUnique({ where: { accountId_email: { accountId: f.tenant.account.id, email } } })).toMatchObject({
      reason: 'bounced',
      detail: 'mailbox unknown',
      bounceReason: 'user_unknown',
    });
    // once more: nothing live is left to move, and the first reason stays
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, email, 'complained'));
    expect((await db().subscriber.findMany({ where: { email } })).map((r) => r.status)).toEqual(['bounced', 'bounced']);
    expect(await db().suppression.findUnique({ where: { accountId_email: { accountId: f.tenant.account.id, email } } })).toMatchObject({ reason: 'bounced' });
    // a suppressed address answers suppressed to a list it never joined, and is not written there
    const third = await requireAccountList(db(), f.tenant.account.id, (await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: false })).key);
    expect(await addSubscriber(db(), third, { email }, 'api')).toBe('suppressed');
    expect(await db().subscriber.count({ where: { listId: third.id } })).toBe(0);
  });
});

describe('lists by key', () => {
  it("another account's list is as unknown as a missing one; the form finds any list by its key", async () => {
    const f = await fixture(true);
    const other = await makeTenant();
    await expect(requireAccountList(db(), other.account.id, f.list.key)).rejects.toThrow(`no list with key "${f.list.key}"`);
    expect((await requireAccountList(db(), f.tenant.account.id, f.list.key)).mailbox.id).toBe(f.tenant.mailbox.id);
    expect((await findListByKey(db(), f.list.key))?.mailbox.address).toBe(f.list.mailbox.address);
    expect(await findListByKey(db(), 'no-such-list')).toBeNull();
  });
});
