import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { makeAccount } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { useApi } from '../helpers/api';

/** `npm run admin -- template ...` (docs/templates.md), as real processes over the same core functions. */
useApi();
jest.setTimeout(120_000);

it('creates a layout and a template from files, previews, changes, lists versions, restores, and refuses a source that does not parse', async () => {
  const account = await makeAccount();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'templates-cli-'));
  const file = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  const layout = await runAdmin('template', 'create', '--account', String(account.id), '--kind', 'layout', '--name', 'Frame', '--alias', 'frame', '--html-file', file('layout.html', '<div>{{ content }}</div>'));
  expect(layout.err).toBe('');
  const made = await runAdmin(
    'template', 'create', '--account', String(account.id), '--name', 'Hello', '--alias', 'hello', '--subject', 'Hi {{ name }}',
    '--html-file', file('hello.html', '<p>Hi {{ name }}</p>'), '--layout', 'frame', '--required', 'name',
  );
  expect(made.out.template).toMatchObject({ alias: 'hello', layout: layout.out.template.id, required: ['name'], version: 1 });
  const id = String(made.out.template.id);

  const preview = await runAdmin('template', 'preview', id, '--variables', JSON.stringify({ name: '<Ann>' }));
  expect(preview.out).toMatchObject({ subject: 'Hi <Ann>', html: '<div><p>Hi &lt;Ann&gt;</p></div>', text: 'Hi <Ann>' });

  expect((await runAdmin('template', 'set', id, '--subject', 'Hello {{ name }}')).out.template.version).toBe(2);
  expect((await runAdmin('template', 'versions', id)).out.versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
  expect((await runAdmin('template', 'restore', id, '--version', '1')).out.template).toMatchObject({ version: 3, subject: 'Hi {{ name }}' });

  const refused = await runAdmin('template', 'set', id, '--html-file', file('bad.html', '<p>\n{% if name %}'));
  expect(refused.code).not.toBe(0);
  expect(refused.err).toMatch(/line 2/);
  expect((await db().template.findUniqueOrThrow({ where: { id: Number(id) } })).version).toBe(3);
});
