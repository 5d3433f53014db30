import { db, rawQuery } from '../../apps/core/src/db';
import { NotFound } from '../../apps/core/src/errors';
import { deleteStopEntry, listStopEntries } from '../../apps/core/src/stop-list/entries';
import { addToStopList, isStopListed, loadStopList, stopListed } from '../../apps/core/src/stop-list/repository';
import { makeAccount } from '../helpers/factories';

/**
 * The outreach stop list (stop-list/): the operator's pages of it and removals, the entries the service adds (a reply
 * asking to stop, an opt-out), and the rule over domains and their parents, in code and in SQL. Real rows.
 */
const sqlSays = async (account: number, email: string) =>
  (await rawQuery<{ stopped: boolean }>(db(), `SELECT ${stopListed('$1::int', '$2::text')} AS stopped`, [account, email]))[0]!.stopped;

describe('the operator\'s view: listStopEntries and deleteStopEntry', () => {
  it('pages an account\'s entries by id, the next cursor only while more remain, other accounts\' never shown', async () => {
    const account = (await makeAccount()).id;
    const other = (await makeAccount()).id;
    await db().stopEntry.create({ data: { accountId: other, kind: 'email', value: 'theirs@example.org' } });
    const made = [];
    for (const [kind, value] of [['email', 'a@example.org'], ['domain', 'rival.example'], ['email', 'c@example.org']] as const) made.push(await db().stopEntry.create({ data: { accountId: account, kind, value } }));
    const first = await listStopEntries(db(), { account, limit: 2 });
    expect(first).toEqual({
      entries: [
        { id: made[0]!.id, account, kind: 'email', value: 'a@example.org', created_at: made[0]!.createdAt.toISOString() },
        { id: made[1]!.id, account, kind: 'domain', value: 'rival.example', created_at: made[1]!.createdAt.toISOString() },
      ],
      next: made[1]!.id,
    });
    expect(await listStopEntries(db(), { account, limit: 2, after: first.next! })).toEqual({ entries: [expect.objectContaining({ value: 'c@example.org' })], next: null });
    // exactly a page left: no next page
    expect((await listStopEntries(db(), { account, limit: 3 })).next).toBeNull();
    expect((await listStopEntries(db(), { account, limit: 3, after: 0 })).entries).toHaveLength(3);
    expect((await listStopEntries(db(), { account: other, limit: 10 })).entries.map((e) => e.value)).toEqual(['theirs@example.org']);
  });

  it('refuses an unknown account with a 404', async () => {
    await expect(listStopEntries(db(), { account: 2_000_000, limit: 10 })).rejects.toBeInstanceOf(NotFound);
  });

  it('removes an entry, so the address may be written to again; an entry that is not there is a 404', async () => {
    const account = (await makeAccount()).id;
    const entry = await db().stopEntry.create({ data: { accountId: account, kind: 'email', value: 'back@example.org' } });
    const kept = await db().stopEntry.create({ data: { accountId: account, kind: 'email', value: 'kept@example.org' } });
    expect(await isStopListed(db(), account, { email: 'back@example.org', site: null })).toBe(true);
    await deleteStopEntry(db(), entry.id);
    expect(await isStopListed(db(), account, { email: 'back@example.org', site: null })).toBe(false);
    await expect(deleteStopEntry(db(), entry.id)).rejects.toMatchObject({ status: 404, message: `no stop-list entry ${entry.id}` });
    // only that entry
    expect(await db().stopEntry.findUnique({ where: { id: kept.id } })).not.toBeNull();
  });
});

describe('addToStopList', () => {
  it('puts an address on the account\'s list once, however often asked', async () => {
    const account = (await makeAccount()).id;
    await addToStopList(db(), account, 'stop@example.org');
    await addToStopList(db(), account, 'stop@example.org');
    expect(await db().stopEntry.findMany({ where: { accountId: account }, select: { kind: true, value: true } })).toEqual([{ kind: 'email', value: 'stop@example.org' }]);
    expect(await isStopListed(db(), account, { email: 'stop@example.org', site: null })).toBe(true);
    expect(await isStopListed(db(), account, { email: 'other@example.org', site: null })).toBe(false);
  });
});

describe('the rule over domains, in code and in SQL', () => {
  it('a domain entry stops its subdomains and itself, never a parent of it, a top-level domain or another account', async () => {
    const account = (await makeAccount()).id;
    const other = (await makeAccount()).id;
    await db().stopEntry.createMany({
      data: [
        { accountId: account, kind: 'domain', value: 'co.uk' },
        { accountId: account, kind: 'domain', value: 'news.acme.org' },
        { accountId: account, kind: 'email', value: 'acme.net' },
        { accountId: other, kind: 'domain', value: 'example.com' },
      ],
    });
    const cases: [{ email: string | null; site: string | null }, boolean][] = [
      [{ email: 'a@mail.acme.co.uk', site: null }, true],
      [{ email: 'a@co.uk', site: null }, true],
      [{ email: 'a@news.acme.org', site: null }, true],
      [{ email: 'a@x.news.acme.org', site: null }, true],
      [{ email: 'a@acme.org', site: null }, false],
      [{ email: 'a@uk', site: null }, false],
      // an email entry is an address, never a domain
      [{ email: 'a@acme.net', site: null }, false],
      [{ email: 'a@example.com', site: null }, false],
      [{ email: null, site: 'shop.co.uk' }, true],
      [{ email: null, site: 'news.acme.org' }, true],
      [{ email: null, site: 'acme.org' }, false],
      [{ email: 'a@example.com', site: 'www.news.acme.org' }, true],
      [{ email: null, site: null }, false],
    ];
    const list = await loadStopList(db(), account, cases.map(([c]) => c));
    for (const [contact, stopped] of cases) {
      expect({ contact, code: list.covers(contact), alone: await isStopListed(db(), account, contact) }).toEqual({ contact, code: stopped, alone: stopped });
      if (contact.email !== null && contact.site === null) expect({ contact, sql: await sqlSays(account, contact.email) }).toEqual({ contact, sql: stopped });
    }
    // uk is a top-level domain: an entry for it would stop a whole country; the code never asks for one
    await db().stopEntry.create({ data: { accountId: account, kind: 'domain', value: 'uk' } });
    expect((await loadStopList(db(), account, [{ email: 'a@shop.uk', site: null }])).covers({ email: 'a@shop.uk', site: null })).toBe(false);
  });

  it('answers only for the entries it read: a contact it was not loaded for is judged on those', async () => {
    const account = (await makeAccount()).id;
    await db().stopEntry.createMany({ data: [{ accountId: account, kind: 'email', value: 'x@example.org' }, { accountId: account, kind: 'domain', value: 'stopped.org' }] });
    const list = await loadStopList(db(), account, [{ email: 'x@example.org', site: null }]);
    expect(list.covers({ email: 'x@example.org', site: null })).toBe(true);
    expect(list.covers({ email: 'y@stopped.org', site: null })).toBe(false);
  });
});
