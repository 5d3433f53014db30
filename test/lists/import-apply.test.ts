import { db } from '../../apps/core/src/db';
import { getImport, receiveImport, runImport } from '../../apps/core/src/imports';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { useApi } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * What applying an import does to a list that already holds people (imports/run.ts and repository.ts): the stop list
 * and the account's suppressions refuse a line, an export's bounced or complained line is recorded and never written
 * to, and a person on the list is changed only as the rules say. Real rows; the job run by calling its function.
 */
useApi();

let tenant: Tenant;
beforeEach(async () => {
  tenant = await makeTenant();
});

async function imported(listId: number, format: 'csv' | 'ndjson', text: string) {
  const view = await receiveImport(db(), listId, format, [text]);
  expect(await runImport(db(), view.id)).toBe('done');
  return getImport(db(), view.id);
}

const person = (listId: number, email: string) => db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId, email } } });
const countOf = async (listId: number) => (await db().list.findUniqueOrThrow({ where: { id: listId } })).subscriberCount;

describe('the account decides first', () => {
  it('refuses a stop-listed address, records a suppressed one with its reason, and an export\'s bounced or complained line as such', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const other = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().stopEntry.create({ data: { accountId: tenant.account.id, kind: 'domain', value: 'stopped.example' } });
    await db().$transaction((tx) => suppressAddress(tx, tenant.account.id, 'complained@example.com', 'complained'));
    // bounced on another list of the account, without a suppression row
    await db().subscriber.create({ data: { listId: other.id, email: 'old@example.com', status: 'bounced' } });
    const lines = [
      { email: 'x@news.stopped.example', status: 'bounced' },
      { email: 'complained@example.com', name: 'C', tags: ['t'] },
      { email: 'old@example.com' },
      { email: 'said@example.com', status: 'complained', name: 'Said', tags: ['a'], fields: { n: 1 }, consent_source: 'fair', consent_at: '2024-01-02T03:04:05Z' },
      { email: 'fine@example.com' },
    ];
    const report = await imported(list.id, 'ndjson', lines.map((l) => JSON.stringify(l)).join('\n'));
    expect(report).toMatchObject({ total: 5, added: 1, updated: 0, skipped: 0, refused: 4 });
    expect(report.errors).toEqual([
      { line: 1, reason: 'the address is on the stop list' },
      { line: 2, reason: 'the address is suppressed (complained)' },
      { line: 3, reason: 'the address is suppressed (bounced)' },
      { line: 4, reason: 'the line says complained: recorded, never written to' },
    ]);
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: list.id, email: 'x@news.stopped.example' } } })).toBeNull();
    expect(await person(list.id, 'complained@example.com')).toMatchObject({ status: 'complained', name: 'C', tags: ['t'] });
    expect(await person(list.id, 'old@example.com')).toMatchObject({ status: 'bounced' });
    const said = await person(list.id, 'said@example.com');
    expect(said).toMatchObject({ status: 'complained', name: 'Said', tags: ['a'], fields: { n: 1 }, consentSource: 'fair' });
    expect(said.consentAt!.toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(await countOf(list.id)).toBe(1);
  });

  it('a suppressed line never replaces the person already on the list', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().subscriber.create({ data: { listId: list.id, email: 'kept@example.com', status: 'unsubscribed', name: 'Kept' } });
    const report = await imported(list.id, 'csv', 'email,name,status\nkept@example.com,New,bounced\n');
    expect(report).toMatchObject({ refused: 1 });
    expect(await person(list.id, 'kept@example.com')).toMatchObject({ status: 'unsubscribed', name: 'Kept' });
  });
});

describe('a person already on the list', () => {
  it('gets a non-empty name, more tags, merged fields; pending turns active; nothing else changes, and a line that changes nothing is skipped', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().subscriber.createMany({
      data: [
        { listId: list.id, email: 'ann@example.com', status: 'active', name: 'Ann', tags: ['a'], fields: { x: 1, y: 1 }, consentSource: 'form', consentAt: new Date('2020-01-01T00:00:00Z') },
        { listId: list.id, email: 'pen@example.com', status: 'pending', name: 'Pen' },
        { listId: list.id, email: 'left@example.com', status: 'unsubscribed', name: 'Left' },
        { listId: list.id, email: 'same@example.com', status: 'active', name: 'Same', tags: ['s'], fields: { k: 'v' } },
        { listId: list.id, email: 'quit@example.com', status: 'active' },
      ],
    });
    await db().list.update({ where: { id: list.id }, data: { subscriberCount: 3 } });
    const lines = [
      { email: 'ann@example.com', name: '', tags: ['b', 'a'], fields: { y: 2, z: 3 }, consent_source: 'import file', consent_at: '2024-01-01T00:00:00Z' },
      { email: 'pen@example.com', status: 'active', consent_source: 'paper', consent_at: '2024-02-02T00:00:00Z' },
      { email: 'left@example.com', status: 'active', name: 'Back' },
      { email: 'same@example.com', name: 'Same', tags: ['s'], fields: { k: 'v' } },
      { email: 'quit@example.com', status: 'unsubscribed' },
    ];
    const report = await imported(list.id, 'ndjson', lines.map((l) => JSON.stringify(l)).join('\n'));
    expect(report).toMatchObject({ added: 0, updated: 4, skipped: 1, refused: 0, errors: [] });
    const ann = await person(list.id, 'ann@example.com');
    expect(ann).toMatchObject({ status: 'active', name: 'Ann', tags: ['a', 'b'], fields: { x: 1, y: 2, z: 3 }, consentSource: 'form' });
    expect(ann.consentAt!.toISOString()).toBe('2020-01-01T00:00:00.000Z');
    const pen = await person(list.id, 'pen@example.com');
    expect(pen).toMatchObject({ status: 'active', consentSource: 'paper' });
    expect(pen.confirmedAt).not.toBeNull();
    expect(pen.consentAt!.toISOString()).toBe('2024-02-02T00:00:00.000Z');
    // one who left is never made active again by an import; the name still changes
    expect(await person(list.id, 'left@example.com')).toMatchObject({ status: 'unsubscribed', name: 'Back' });
    const quit = await person(list.id, 'quit@example.com');
    expect(quit.status).toBe('unsubscribed');
    expect(quit.unsubscribedAt).not.toBeNull();
    // ann, pen and same active; quit left
    expect(await countOf(list.id)).toBe(3);
  });

  it('new people: active with confirmed_at, or unsubscribed with unsubscribed_at, consent now unless the line says', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await imported(list.id, 'csv', 'email,status\nnew@example.com,\nout@example.com,unsubscribed\n');
    const added = await person(list.id, 'new@example.com');
    expect(added.status).toBe('active');
    expect(added.confirmedAt).not.toBeNull();
    expect(added.unsubscribedAt).toBeNull();
    expect(Math.abs(added.consentAt!.getTime() - Date.now())).toBeLessThan(60_000);
    const out = await person(list.id, 'out@example.com');
    expect(out.status).toBe('unsubscribed');
    expect(out.confirmedAt).toBeNull();
    expect(out.unsubscribedAt).not.toBeNull();
    expect(await countOf(list.id)).toBe(1);
  });

  it('keeps at most 20 tags when an import adds to the ones a person has', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const old = Array.from({ length: 15 }, (_, i) => `old${i}`);
    await db().subscriber.create({ data: { listId: list.id, email: 'tags@example.com', status: 'active', tags: old } });
    const more = Array.from({ length: 10 }, (_, i) => `new${i}`);
    await imported(list.id, 'ndjson', JSON.stringify({ email: 'tags@example.com', tags: more }));
    expect((await person(list.id, 'tags@example.com')).tags).toEqual([...old, ...more.slice(0, 5)]);
  });

  it('on a list with double opt-in: one already active or gone is skipped, one pending is updated, a new one asked', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: true });
    await db().subscriber.createMany({
      data: [
        { listId: list.id, email: 'in@example.com', status: 'active' },
        { listId: list.id, email: 'gone@example.com', status: 'unsubscribed' },
        { listId: list.id, email: 'wait@example.com', status: 'pending' },
      ],
    });
    const report = await imported(list.id, 'csv', 'email,name\nin@example.com,In\ngone@example.com,Gone\nwait@example.com,Wait\nask@example.com,Ask\n');
    expect(report).toMatchObject({ added: 1, updated: 1, skipped: 2, refused: 0 });
    expect(await person(list.id, 'ask@example.com')).toMatchObject({ status: 'pending', name: 'Ask' });
    expect(await person(list.id, 'gone@example.com')).toMatchObject({ status: 'unsubscribed' });
  });
});

describe('what the mutation run found open', () => {
  it('a line that says pending takes the add of the API (one by one): on a list without double opt-in that is active', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    const report = await imported(list.id, 'csv', 'email,status\nask@example.com,pending\n');
    expect(report).toMatchObject({ added: 1 });
    expect(await person(list.id, 'ask@example.com')).toMatchObject({ status: 'active' });
    expect(await countOf(list.id)).toBe(1);
  });

  it('a finished import removes its own stored lines only; processed counts every kind of line', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().stopEntry.create({ data: { accountId: tenant.account.id, kind: 'email', value: 'stop@example.com' } });
    const waiting = await receiveImport(db(), list.id, 'csv', ['email\nlater@example.com\n']);
    const report = await imported(list.id, 'csv', 'email,name\nnew@example.com,N\nnew@example.com,M\nstop@example.com,S\nbad\n');
    expect(report).toMatchObject({ added: 1, updated: 1, refused: 1, skipped: 1, processed: 4 });
    expect(await db().importLine.count({ where: { importId: waiting.id } })).toBe(1);
  });
});
