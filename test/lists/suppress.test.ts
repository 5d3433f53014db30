import { db } from '../../apps/core/src/db';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { useApi } from '../helpers/api';
import { makeList } from '../helpers/factories';
import { activeRows, address, listFixture } from './support';

const ctx = useApi();

describe('suppressAddress (for bounce and complaint handling)', () => {
  it('suppresses the address in the account, moves its live subscriptions and keeps every count exact', async () => {
    const f = await listFixture(ctx.api);
    const second = await makeList(f.tenant.account.id, f.tenant.mailbox.id);
    const email = address();
    await f.subscribe({ email, confirmed: true });
    await f.client.post('/api/v1/subscribers').send({ list: second.key, email });
    const bystander = address();
    await f.subscribe({ email: bystander, confirmed: true });
    expect(await f.count()).toBe(2);

    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, email.toUpperCase(), 'complained', 'abuse report'));

    expect((await f.subscriber(email))?.status).toBe('complained');
    expect((await db().subscriber.findUnique({ where: { listId_email: { listId: second.id, email } } }))?.status).toBe('complained');
    expect(await f.count()).toBe(1);
    expect(await activeRows(f.list.id)).toBe(1);
    expect((await db().list.findUniqueOrThrow({ where: { id: second.id } })).subscriberCount).toBe(0);
    expect(await db().suppression.findUnique({ where: { accountId_email: { accountId: f.tenant.account.id, email } } })).toMatchObject({ reason: 'complained' });
    expect((await f.subscribe({ email })).body.status).toBe('suppressed');
    expect((await f.unsubscribe({ email })).body.status).toBe('gone');
  });

  it('leaves another account\'s subscriptions of the same address alone', async () => {
    const mine = await listFixture(ctx.api);
    const theirs = await listFixture(ctx.api);
    const email = address();
    await theirs.subscribe({ email, confirmed: true });
    await db().$transaction((tx) => suppressAddress(tx, mine.tenant.account.id, email, 'bounced'));
    expect((await theirs.subscriber(email))?.status).toBe('active');
    expect(await theirs.count()).toBe(1);
  });
});
