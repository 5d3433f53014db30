import { db } from '../../apps/core/src/db';
import { emitEvent, emitEvents } from '../../apps/core/src/events';
import { makeAccount, wantEvents } from '../helpers/factories';

describe('event outbox', () => {
  it('writes an event with the transaction of its change', async () => {
    const account = await makeAccount();
    await wantEvents(account.id);
    await db().$transaction(async (tx) => {
      await emitEvent(tx, account.id, 'subscriber.confirmed', { list: 'abc', email: 'a@example.com' });
    });
    const events = await db().event.findMany({ where: { accountId: account.id } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'subscriber.confirmed', data: { list: 'abc', email: 'a@example.com' }, dispatchedAt: null });
    expect(events[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('writes an event only for an account with an enabled endpoint subscribed to its type', async () => {
    const account = await makeAccount();
    const types = async () => (await db().event.findMany({ where: { accountId: account.id } })).map((e) => e.type).sort();
    const emit = () =>
      db().$transaction((tx) =>
        emitEvents(tx, [
          { accountId: account.id, type: 'message.bounced', data: { id: 'x' } },
          { accountId: account.id, type: 'subscriber.pending', data: { email: 'a@example.com' } },
        ]),
      );
    await emit();
    expect(await types()).toEqual([]);
    const hook = await wantEvents(account.id, ['message.bounced']);
    await db().webhook.update({ where: { id: hook.id }, data: { enabled: false } });
    await emit();
    expect(await types()).toEqual([]);
    await db().webhook.update({ where: { id: hook.id }, data: { enabled: true } });
    await emit();
    expect(await types()).toEqual(['message.bounced']);
    // another account's endpoint wants nothing of this one
    await wantEvents((await makeAccount()).id);
    await db().webhook.update({ where: { id: hook.id }, data: { events: ['*'] } });
    await emit();
    expect(await types()).toEqual(['message.bounced', 'message.bounced', 'subscriber.pending']);
  });

  it('emits nothing for a change that rolled back', async () => {
    const account = await makeAccount();
    await wantEvents(account.id);
    await expect(
      db().$transaction(async (tx) => {
        await emitEvents(tx, [
          { accountId: account.id, type: 'message.sent', data: { id: 'x' } },
          { accountId: account.id, type: 'message.bounced', data: { id: 'y' } },
        ]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await db().event.count({ where: { accountId: account.id } })).toBe(0);
  });
});

describe('prospect change events', () => {
  it('emits state_changed with previous, and replied when the prospect replied', async () => {
    const { emitProspectChange } = await import('../../apps/core/src/outreach/changes');
    const account = await makeAccount();
    await wantEvents(account.id);
    const campaign = { id: 7, accountId: account.id, stages: ['new', 'talking'] };
    const prospect = {
      id: 3, campaignId: 7, email: 'p@example.com', site: null, name: 'P', fields: {}, status: 'replied', reason: '', step: 1,
      stage: 1, value: 0, reply: 'human', repliedAt: new Date('2026-01-02T03:04:05Z'), nextAt: null, closedAt: null, threadId: null,
      createdAt: new Date(), updatedAt: new Date(),
    } as const;
    await db().$transaction(async (tx) => {
      await emitProspectChange(tx, campaign, 'writing', prospect as never);
      await emitProspectChange(tx, campaign, 'replied', prospect as never); // no change: nothing
    });
    const events = await db().event.findMany({ where: { accountId: account.id }, orderBy: { type: 'asc' } });
    expect(events.map((e) => e.type)).toEqual(['prospect.replied', 'prospect.state_changed']);
    expect(events[1]!.data).toMatchObject({ id: 3, email: 'p@example.com', site: '', status: 'replied', previous: 'writing', campaign: 7, stage_name: 'talking', replied_at: '2026-01-02T03:04:05.000Z' });
  });
});
