import { db, rawQuery } from '../../apps/core/src/db';
import { loadStopList, stopListed } from '../../apps/core/src/stop-list/repository';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/**
 * The stop-list rule has one home (stop-list/repository.ts) and two forms: the SQL fragment every audience and send uses, and
 * the code outreach uses on a request's prospects. Both must give each address the same answer, and the right one.
 */
useApi();

const cases: [string, boolean][] = [
  ['named@acme.org', true], // the address itself
  ['other@acme.org', false], // another address of its domain
  ['anyone@stopped.org', true], // the domain
  ['reader@news.stopped.org', true], // a subdomain of it
  ['deep@a.b.stopped.org', true],
  ['reader@notstopped.org', false], // a name that merely ends alike
  ['reader@stopped.org.example', false], // the domain as a prefix
  ['reader@example.com', false],
];

it('the SQL fragment and the code give every address the same, right answer', async () => {
  const tenant = await makeTenant();
  await db().stopEntry.createMany({
    data: [
      { accountId: tenant.account.id, value: 'named@acme.org', kind: 'email' },
      { accountId: tenant.account.id, value: 'stopped.org', kind: 'domain' },
    ],
  });
  const inCode = await loadStopList(db(), tenant.account.id, cases.map(([email]) => ({ email, site: null })));
  for (const [email, stopped] of cases) {
    const [row] = await rawQuery<{ stopped: boolean }>(db(), `SELECT ${stopListed('$1::int', '$2::text')} AS stopped`, [tenant.account.id, email]);
    expect({ email, sql: row!.stopped, code: inCode.covers({ email, site: null }) }).toEqual({ email, sql: stopped, code: stopped });
  }
  // a prospect's site counts in code as an address's domain would
  const withSite = await loadStopList(db(), tenant.account.id, [{ email: null, site: 'shop.stopped.org' }]);
  expect(withSite.covers({ email: null, site: 'shop.stopped.org' })).toBe(true);
  const otherSite = await loadStopList(db(), tenant.account.id, [{ email: null, site: 'notstopped.org' }]);
  expect(otherSite.covers({ email: null, site: 'notstopped.org' })).toBe(false);
});
