import { db } from '../../apps/core/src/db';
import { emitEvent, emitEvents } from '../../apps/core/src/events';
import { makeAccount } from '../helpers/factories';

describe('event outbox', () => {
  it('writes an event with the transaction of its change', async () => {
    const account = await makeAccount();
    await db().$transaction(async (tx) => {
      await emitEvent(tx, account.id, 'subscriber.confirmed', { list: 'abc', email: 'a@example.com' });
    });
    const events = await db().event.findMany({ where: { accountId: account.id } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'subscriber.confirmed', data: { list: 'abc', email: 'a@example.com' }, dispatchedAt: null });
    expect(events[0].id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('emits nothing for a change that rolled back', async () => {
    const account = await makeAccount();
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
