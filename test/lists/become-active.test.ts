import { db } from '../../apps/core/src/db';
import { consentRows } from '../../apps/core/src/consent/repository';
import { replaceSteps } from '../../apps/core/src/lifecycle/repository';
import { queue, QUEUE } from '../../apps/core/src/queues';
import { addSubscriber, addSubscriberByKey, importSubscriber, requireAccountList, type ListWithMailbox } from '../../apps/core/src/subscribers';
import { FastAdds } from '../../apps/core/src/subscribers/fast-add';
import { confirmByLink } from '../../apps/core/src/subscribers/tokens';
import { makeList, makeTenant, wantEvents } from '../helpers/factories';
import { address, confirmationMessages, tokenOfStored } from './support';

/**
 * "A subscriber becomes active" is written once (subscribers/activate.ts): every path to active must do all it entails
 * (the count, the welcome series, the consent ledger, the `subscriber.confirmed` event). Each path is checked for each,
 * so a caller that made the person active some other way, or left a part out, fails here.
 */
beforeAll(() => queue(QUEUE.delivery).waitUntilReady());

const adds = new FastAdds(db());

async function seriesList(confirm: boolean): Promise<ListWithMailbox> {
  const tenant = await makeTenant();
  await wantEvents(tenant.account.id);
  const made = await makeList(tenant.account.id, tenant.mailbox.id, { confirm });
  await replaceSteps(db(), made.id, [{ subject: 'Welcome', html: null, text: 'Hello', templateId: null, delayHours: 2 }]);
  return requireAccountList(db(), tenant.account.id, made.key);
}

/** A pending person on a list that asks for confirmation (the confirmation email written). */
async function pending(list: ListWithMailbox, email: string) {
  expect(await addSubscriber(db(), list, { email }, 'api')).toBe('pending');
}

/** Each path to active: the list it needs (confirming or not) and what it does to `email`. */
const PATHS: { name: string; confirm: boolean; consent: { kind: string; source: string }; activate: (list: ListWithMailbox, email: string) => Promise<unknown> }[] = [
  {
    name: 'an API add of a new person, through the state machine',
    confirm: false,
    consent: { kind: 'subscribe', source: 'api_key' },
    activate: async (list, email) => expect(await addSubscriber(db(), list, { email }, 'api')).toBe('active'),
  },
  {
    name: 'an API add of a new person as confirmed, through the one-statement add',
    confirm: true,
    consent: { kind: 'subscribe', source: 'api_key' },
    activate: async (list, email) => expect(await addSubscriberByKey(db(), adds, list.accountId, list.key, { email, confirmed: true })).toBe('active'),
  },
  {
    name: 'a pending person added again as confirmed (re-subscribe)',
    confirm: true,
    consent: { kind: 'confirm', source: 'api_key' },
    activate: async (list, email) => {
      await pending(list, email);
      expect(await addSubscriber(db(), list, { email, confirmed: true }, 'api')).toBe('active');
    },
  },
  {
    name: 'the confirmation link',
    confirm: true,
    consent: { kind: 'confirm', source: 'form' },
    activate: async (list, email) => {
      await pending(list, email);
      const [message] = await confirmationMessages(email);
      expect((await confirmByLink(db(), tokenOfStored(message!))).result).toBe('confirmed');
    },
  },
  {
    name: "an import's line added as the API's add (pending, on a list that does not confirm)",
    confirm: false,
    consent: { kind: 'import', source: 'import' },
    activate: async (list, email) => expect(await importSubscriber(db(), list, { email })).toBe('active'),
  },
];

describe('every path to active does everything becoming active entails', () => {
  it.each(PATHS)('$name: counted, the series started, the ledger written, subscriber.confirmed emitted', async (path) => {
    const list = await seriesList(path.confirm);
    const email = address('active');
    const before = new Date(Date.now() - 1000);
    await path.activate(list, email);

    const person = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: list.id, email } } });
    expect(person.status).toBe('active');
    expect(person.confirmedAt).toBeInstanceOf(Date);
    expect((await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount).toBe(1);

    const runs = await db().seriesRun.findMany({ where: { subscriberId: person.id } });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ listId: list.id, step: 0, status: 'waiting' });
    // step 1 is due its delay (2 h) after the moment the person became active
    const due = runs[0]!.nextAt!.getTime() - person.confirmedAt!.getTime();
    expect(Math.abs(due - 2 * 3_600_000)).toBeLessThan(60_000);

    const ledger = await consentRows(db(), person.id);
    // none of these callers names an ip; only the confirmation link names the page the person was shown
    const formText = path.name === 'the confirmation link' ? expect.stringContaining(list.name) : '';
    expect(ledger.at(-1)).toMatchObject({ ...path.consent, ip: '', formText, detail: expect.objectContaining({ status: 'active' }) });

    const events = await db().event.findMany({ where: { accountId: list.accountId, type: 'subscriber.confirmed', createdAt: { gte: before } } });
    expect(events.map((e) => e.data)).toEqual([{ list: list.key, email, status: 'active' }]);
  });

  it('the confirmation link keeps the page the person confirmed on in the ledger', async () => {
    const list = await seriesList(true);
    const email = address('page');
    await pending(list, email);
    const [message] = await confirmationMessages(email);
    await confirmByLink(db(), tokenOfStored(message!), new Date(), { source: 'form', ip: '192.0.2.44' });
    const person = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: list.id, email } } });
    const row = (await consentRows(db(), person.id)).at(-1)!;
    expect(row).toMatchObject({ kind: 'confirm', source: 'form', ip: '192.0.2.44', detail: { status: 'active' } });
    expect(row.formText).toContain(list.name);
  });

  it('a person active already is not made active twice: no second count, run, ledger row or event', async () => {
    const list = await seriesList(false);
    const email = address('twice');
    expect(await addSubscriber(db(), list, { email }, 'api')).toBe('active');
    expect(await addSubscriber(db(), list, { email, confirmed: true }, 'api')).toBe('exists');
    expect(await addSubscriberByKey(db(), adds, list.accountId, list.key, { email, confirmed: true })).toBe('exists');
    const person = await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: list.id, email } } });
    expect((await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount).toBe(1);
    expect(await db().seriesRun.count({ where: { subscriberId: person.id } })).toBe(1);
    expect((await consentRows(db(), person.id)).map((r) => r.kind)).toEqual(['subscribe']);
    expect(await db().event.count({ where: { accountId: list.accountId, type: 'subscriber.confirmed' } })).toBe(1);
  });
});
