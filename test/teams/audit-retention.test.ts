import { db } from '../../apps/core/src/db';
import { dropOldAuditEntries } from '../../apps/core/src/audit/retention';
import { makeAccount } from '../helpers/factories';

/**
 * The audit log is never updated or deleted by the service (docs/teams.md), retention aside: the table's trigger
 * refuses every UPDATE and DELETE, but the retention task's delete of entries older than AUDIT_RETENTION_DAYS.
 */
const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);

const entry = (at: Date, account: number, action: string) =>
  db().auditEntry.create({ data: { at, actorKind: 'admin-token', actorLabel: 'admin token', via: 'admin-api', action, resource: 'list', accountId: account } });

const actions = async (account: number) => (await db().auditEntry.findMany({ where: { accountId: account }, orderBy: { id: 'asc' } })).map((e) => e.action);

it('refuses an UPDATE or a DELETE of an entry by the service, however it is written', async () => {
  const account = (await makeAccount()).id;
  const kept = await entry(ago(100), account, 'create');
  const refused = /append-only: (UPDATE|DELETE) refused/;
  await expect(db().auditEntry.update({ where: { id: kept.id }, data: { action: 'forged' } })).rejects.toThrow(refused);
  await expect(db().auditEntry.delete({ where: { id: kept.id } })).rejects.toThrow(refused);
  await expect(db().auditEntry.deleteMany({ where: { accountId: account } })).rejects.toThrow(refused);
  await expect(db().$executeRaw`UPDATE audit_log SET after = '{}' WHERE id = ${kept.id}`).rejects.toThrow(refused);
  // the retention's way in, used for an entry younger than its cut-off: refused too
  await expect(
    db().$transaction(async (tx) => {
      await tx.$executeRaw`SELECT set_config('mailservice.audit_prune_before', ${ago(200).toISOString()}, true)`;
      return tx.$executeRaw`DELETE FROM audit_log WHERE id = ${kept.id}`;
    }),
  ).rejects.toThrow(refused);
  // and it never lets an UPDATE through
  await expect(
    db().$transaction(async (tx) => {
      await tx.$executeRaw`SELECT set_config('mailservice.audit_prune_before', ${new Date().toISOString()}, true)`;
      return tx.$executeRaw`UPDATE audit_log SET action = 'forged' WHERE id = ${kept.id}`;
    }),
  ).rejects.toThrow(/append-only: UPDATE refused/);
  expect(await actions(account)).toEqual(['create']);
});

it('retention deletes the entries older than AUDIT_RETENTION_DAYS and keeps the others; 0 keeps them all', async () => {
  const account = (await makeAccount()).id;
  await entry(ago(400), account, 'oldest');
  await entry(ago(31), account, 'old');
  await entry(ago(29), account, 'recent');
  await entry(new Date(), account, 'now');

  expect(await dropOldAuditEntries(db(), new Date(), 0)).toBe(0);
  expect(await actions(account)).toEqual(['oldest', 'old', 'recent', 'now']);

  expect(await dropOldAuditEntries(db(), new Date(), 30)).toBeGreaterThanOrEqual(2);
  expect(await actions(account)).toEqual(['recent', 'now']);

  // the cut-off was for that transaction only: the service's own delete is refused again at once
  await expect(db().auditEntry.deleteMany({ where: { accountId: account } })).rejects.toThrow(/append-only: DELETE refused/);
  expect(await actions(account)).toEqual(['recent', 'now']);
});
