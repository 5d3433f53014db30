import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeAccount, makeList, makeMailbox } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';

/** The CLI names a list one way: by its id or its key, either one, in every command that takes a list (docs/lists.md). */
useApi();

let list: { id: number; key: string };
beforeAll(async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const made = await makeList(account.id, mailbox.id, { confirm: false });
  list = await db().list.findUniqueOrThrow({ where: { key: made.key }, select: { id: true, key: true } });
  await db().subscriber.create({ data: { listId: list.id, email: 'ref@readers.org', status: 'active' } });
});

it('list show and subscribers take the id or the key, with the same answer', async () => {
  const [byId, byKey, page] = await Promise.all([runAdmin('list', 'show', String(list.id)), runAdmin('list', 'show', list.key), runAdmin('subscribers', list.key)]);
  expect(byId).toMatchObject({ code: 0, out: { list: { id: list.id, key: list.key } } });
  expect(byKey.out).toEqual(byId.out);
  expect(page.out.subscribers.map((s: { email: string }) => s.email)).toEqual(['ref@readers.org']);
});

it('list set takes the key and broadcast create|list take the id', async () => {
  const text = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'listref-')), 'body.txt');
  fs.writeFileSync(text, 'Hello');
  const [renamed, broadcast] = await Promise.all([
    runAdmin('list', 'set', list.key, '--name', 'Renamed by key'),
    runAdmin('broadcast', 'create', '--list', String(list.id), '--subject', 'By id', '--text', text),
  ]);
  expect(renamed).toMatchObject({ code: 0, out: { list: { id: list.id, name: 'Renamed by key' } } });
  expect(broadcast).toMatchObject({ code: 0, out: { broadcast: { list: list.key, subject: 'By id' } } });
  const listed = await runAdmin('broadcast', 'list', '--list', String(list.id));
  expect(listed.out.broadcasts.map((b: { subject: string }) => b.subject)).toEqual(['By id']);
});

it('refuses a name that is neither an id nor a key of a list, changing nothing', async () => {
  const before = await db().list.findUniqueOrThrow({ where: { id: list.id } });
  const unknown = await runAdmin('list', 'set', 'no-such-list', '--name', 'x');
  expect(unknown.code).not.toBe(0);
  expect(JSON.parse(unknown.err)).toEqual({ ok: false, error: 'no list with id or key "no-such-list"' });
  expect(await db().list.findUniqueOrThrow({ where: { id: list.id } })).toEqual(before);
});
