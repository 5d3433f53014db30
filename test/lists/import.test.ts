import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { runTs } from '../helpers/processes';
import { db } from '../../apps/core/src/db';
import { receiveImport, requeueImports, runImport } from '../../apps/core/src/imports';
import { queue, QUEUE } from '../../apps/core/src/queues';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { makeList } from '../helpers/factories';
import { activeRows, listFixture } from './support';

const server = useApi();
const sink = useMail({ queues: ['imports', 'delivery'] });

type ImportAnswer = { id: number; list: number; status: string; total: number; added: number; updated: number; skipped: number; refused: number; errors: { line: number; reason: string }[] };

async function upload(listId: number, body: string, type = 'text/csv') {
  return asAdmin(server.api).post(`/admin/api/lists/${listId}/import`).set('Content-Type', type).send(body);
}

async function finished(id: number): Promise<ImportAnswer> {
  return waitFor(
    async () => {
      const res = await asAdmin(server.api).get(`/admin/api/imports/${id}`);
      expect(res.status).toBe(200);
      return res.body.import.status === 'done' || res.body.import.status === 'failed' ? (res.body.import as ImportAnswer) : undefined;
    },
    { timeout: 20_000, what: `import ${id} finished` },
  );
}

async function importAndWait(listId: number, body: string, type = 'text/csv') {
  const res = await upload(listId, body, type);
  expect(res.status).toBe(202);
  expect(res.body).toEqual({ ok: true, import: { id: expect.any(Number), status: 'queued' } });
  return finished(res.body.import.id);
}

describe('POST /admin/api/lists/:id/import', () => {
  it('imports CSV into a list without confirmation: rows active, a bad line reported and the rest applied, a repeat one subscriber, consent kept', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const csv = [
      'email,name,tags,consent_source,consent_at',
      'ann@example.com,Ann,vip;2024,signup form,2024-03-01T10:00:00Z',
      'not-an-address,Bob',
      '',
      'cid@example.com,"Cid, Jr.",,,',
      'ANN@example.com,Ann B,new,,',
      'dee@example.com,Dee,,,',
    ].join('\n');
    const result = await importAndWait(f.list.id, csv);
    expect(result).toMatchObject({ list: f.list.id, status: 'done', total: 5, added: 3, updated: 1, skipped: 1, refused: 0 });
    expect(result.errors).toEqual([{ line: 3, reason: expect.stringContaining('not an email address') }]);
    const ann = await f.subscriber('ann@example.com');
    expect(ann).toMatchObject({ status: 'active', name: 'Ann B', tags: ['vip', '2024', 'new'], consentSource: 'signup form' });
    expect(ann!.consentAt!.toISOString()).toBe('2024-03-01T10:00:00.000Z');
    const cid = await f.subscriber('cid@example.com');
    expect(cid).toMatchObject({ status: 'active', name: 'Cid, Jr.', consentSource: 'import' });
    expect(Math.abs(cid!.consentAt!.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await f.count()).toBe(3);
    expect(await activeRows(f.list.id)).toBe(3);

    // the same file again adds nothing
    const again = await importAndWait(f.list.id, csv);
    expect(again).toMatchObject({ total: 5, added: 0, refused: 0 });
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(3);
    expect(await f.count()).toBe(3);
    // the stored lines are gone once applied
    expect(await db().importLine.count({ where: { importId: again.id } })).toBe(0);
  });

  it('refuses a CSV line with more fields than the header names, or more than 20 tags, and applies the others', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`).join(';');
    const csv = ['email,name,tags', 'extra@example.com,Ex,a,surplus', `many@example.com,Many,${tags(21)}`, `twenty@example.com,Twenty,${tags(20)}`, 'fit@example.com,"Fit, Jr.",a'].join('\n');
    const result = await importAndWait(f.list.id, csv);
    expect(result).toMatchObject({ status: 'done', total: 4, added: 2, skipped: 2, refused: 0 });
    expect(result.errors).toEqual([
      { line: 2, reason: '4 fields, the header names 3' },
      { line: 3, reason: 'more than 20 tags' },
    ]);
    expect(await f.subscriber('extra@example.com')).toBeNull();
    expect(await f.subscriber('many@example.com')).toBeNull();
    expect((await f.subscriber('twenty@example.com'))!.tags).toHaveLength(20);
    expect(await f.subscriber('fit@example.com')).toMatchObject({ name: 'Fit, Jr.', tags: ['a'] });
  });

  it('NDJSON: tags as an array; suppressed and stop-listed addresses come in as such, never active', async () => {
    const f = await listFixture(server.api, { confirm: false });
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, 'bounced@example.com', 'bounced'));
    await db().stopEntry.create({ data: { accountId: f.tenant.account.id, value: 'stopped.example', kind: 'domain' } });
    const lines = [
      { email: 'eve@example.com', name: 'Eve', tags: ['a', 'b'], status: 'active' },
      { email: 'bounced@example.com', name: 'Bo' },
      { email: 'x@news.stopped.example' },
      { email: 'gone@example.com', status: 'unsubscribed' },
      '{not json',
      { email: 'fay@example.com', tags: 'not-a-list' },
    ].map((l) => (typeof l === 'string' ? l : JSON.stringify(l)));
    const result = await importAndWait(f.list.id, lines.join('\n') + '\n', 'application/x-ndjson');
    expect(result).toMatchObject({ status: 'done', total: 6, added: 2, updated: 0, skipped: 2, refused: 2 });
    expect(result.errors).toEqual([
      { line: 5, reason: 'not JSON' },
      { line: 6, reason: 'tags must be a list of text' },
      { line: 2, reason: 'the address is suppressed (bounced)' },
      { line: 3, reason: 'the address is on the stop list' },
    ]);
    expect(await f.subscriber('eve@example.com')).toMatchObject({ status: 'active', tags: ['a', 'b'] });
    expect(await f.subscriber('bounced@example.com')).toMatchObject({ status: 'bounced' });
    expect(await f.subscriber('x@news.stopped.example')).toBeNull();
    expect(await f.subscriber('gone@example.com')).toMatchObject({ status: 'unsubscribed' });
    expect(await f.count()).toBe(1);
  });

  it('round-trips: an NDJSON import with tags, fields and consent shows them in the listing, and its CSV export imports into a new list identical', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const lines = [
      { email: 'ann@example.com', name: 'Ann "A", Jr.', tags: ['vip', '2024', '-dash'], fields: { company: 'Acme, Inc.', size: 12, paying: true, note: '=SUM(A1)' }, consent_source: 'signup form', consent_at: '2024-03-01T10:00:00Z' },
      { email: 'bob@example.com', status: 'unsubscribed', tags: ['x'], consent_source: 'fair', consent_at: '2023-01-02T03:04:05.678Z' },
      { email: '-cid@example.com', name: '+plus', fields: { 'line\nbreak': 'a\nb' } },
      { email: 'bo@example.com', status: 'bounced', tags: ['old'] },
    ].map((l) => JSON.stringify(l));
    const first = await importAndWait(f.list.id, lines.join('\n') + '\n', 'application/x-ndjson');
    expect(first).toMatchObject({ status: 'done', total: 4, added: 3, refused: 1, errors: [{ line: 4, reason: 'the line says bounced: recorded, never written to' }] });

    const listing = async (listId: number) => {
      const res = await asAdmin(server.api).get(`/admin/api/lists/${listId}/subscribers`).expect(200);
      return (res.body.subscribers as Record<string, unknown>[])
        .map(({ id: _id, created_at: _created, confirmed_at: _confirmed, ...rest }) => rest)
        .sort((a, b) => String(a.email).localeCompare(String(b.email)));
    };
    const shown = await listing(f.list.id);
    expect(shown).toEqual([
      { email: '-cid@example.com', name: '+plus', status: 'active', tags: [], fields: { 'line\nbreak': 'a\nb' }, consent_source: 'import', consent_at: expect.any(String) , verification: null },
      { email: 'ann@example.com', name: 'Ann "A", Jr.', status: 'active', tags: ['vip', '2024', '-dash'], fields: { company: 'Acme, Inc.', size: 12, paying: true, note: '=SUM(A1)' }, consent_source: 'signup form', consent_at: '2024-03-01T10:00:00.000Z' , verification: null },
      { email: 'bo@example.com', name: '', status: 'bounced', tags: ['old'], fields: {}, consent_source: 'import', consent_at: expect.any(String) , verification: null },
      { email: 'bob@example.com', name: '', status: 'unsubscribed', tags: ['x'], fields: {}, consent_source: 'fair', consent_at: '2023-01-02T03:04:05.678Z' , verification: null },
    ]);

    const csv = (await asAdmin(server.api).get(`/admin/api/lists/${f.list.id}/subscribers.csv`).expect(200)).text;
    expect(csv.split('\r\n')[0]).toBe('email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at');
    // a spreadsheet never runs a cell as a formula
    expect(csv).toContain("'-cid@example.com,'+plus,active");
    const copy = await makeList(f.tenant.account.id, f.tenant.mailbox.id, { confirm: false });
    const second = await importAndWait(copy.id, csv);
    expect(second).toMatchObject({ status: 'done', total: 4, added: 3, refused: 1 });
    expect(await listing(copy.id)).toEqual(shown);
  });

  it('a list with double opt-in: rows without a status are pending and get the confirmation email', async () => {
    const f = await listFixture(server.api, { confirm: true, smtp: sink.url });
    const result = await importAndWait(f.list.id, 'email,name\nnew@example.com,New\n');
    expect(result).toMatchObject({ status: 'done', total: 1, added: 1 });
    expect(await f.subscriber('new@example.com')).toMatchObject({ status: 'pending' });
    await waitFor(() => sink.to('new@example.com').length === 1, { what: 'the confirmation email' });
  });

  it('refuses: another type 415, an unknown list 404, no token 401, a bad header 400, each {ok:false,error}, writing nothing', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const before = await db().import.count();
    const json = await asAdmin(server.api).post(`/admin/api/lists/${f.list.id}/import`).send({ email: 'a@example.com' });
    expect([json.status, json.body]).toEqual([415, { ok: false, error: expect.stringContaining('text/csv') }]);
    const gzipped = await asAdmin(server.api).post(`/admin/api/lists/${f.list.id}/import`).set('Content-Type', 'text/csv').set('Content-Encoding', 'gzip').send('email\na@example.com\n');
    expect([gzipped.status, gzipped.body]).toEqual([415, { ok: false, error: expect.stringContaining('uncompressed') }]);
    const missing = await upload(2_000_000, 'email\na@example.com\n');
    expect([missing.status, missing.body]).toEqual([404, { ok: false, error: expect.any(String) }]);
    const stranger = await request(server.api.app).post(`/admin/api/lists/${f.list.id}/import`).set('Content-Type', 'text/csv').send('email\na@example.com\n');
    expect([stranger.status, stranger.body]).toEqual([401, { ok: false, error: expect.any(String) }]);
    const header = await upload(f.list.id, 'mail,name\na@example.com,A\n');
    expect([header.status, header.body]).toEqual([400, { ok: false, error: expect.stringContaining('unknown column "mail"') }]);
    const empty = await upload(f.list.id, 'email\n\n');
    expect([empty.status, empty.body]).toEqual([400, { ok: false, error: 'no lines to import' }]);
    const unknown = await asAdmin(server.api).get('/admin/api/imports/2000000');
    expect([unknown.status, unknown.body]).toEqual([404, { ok: false, error: expect.any(String) }]);
    // over the size limit while the body arrives: 413, and the lines stored so far are removed with the import
    const big = ['email', ...Array.from({ length: 5_000 }, (_, i) => `big${i}@example.com`)].join('\n');
    await expect(receiveImport(db(), f.list.id, 'csv', [big.slice(0, 60_000), big.slice(60_000)], { maxBytes: 80_000 })).rejects.toMatchObject({ status: 413 });
    expect(await db().import.count()).toBe(before);
    expect(await db().importLine.count()).toBe(0);
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(0);
  });

  it('housekeeping removes an upload an API process left half stored (never accepted) after an hour', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const stale = await db().import.create({ data: { listId: f.list.id, format: 'csv', columns: ['email'], createdAt: new Date(Date.now() - 2 * 3_600_000) } });
    const fresh = await db().import.create({ data: { listId: f.list.id, format: 'csv', columns: ['email'] } });
    await db().importLine.create({ data: { importId: stale.id, line: 2, text: 'a@example.com' } });
    await requeueImports(db());
    expect(await db().import.findUnique({ where: { id: stale.id } })).toBeNull();
    expect(await db().importLine.count({ where: { importId: stale.id } })).toBe(0);
    expect(await db().import.findUnique({ where: { id: fresh.id } })).toMatchObject({ status: 'queued', received: false });
    await db().import.delete({ where: { id: fresh.id } });
  });

  it('the row is the truth: an import whose job is gone is queued again by housekeeping and resumes at its cursor', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const csv = ['email', ...Array.from({ length: 30 }, (_, i) => `p${i}@example.com`)].join('\n');
    // stored as the API stores it, but its job lost (as if Redis lost it) and a first run cut off after line 11
    const imported = await db().import.create({ data: { listId: f.list.id, format: 'csv', columns: ['email'], received: true, total: 30 } });
    await db().importLine.createMany({ data: csv.split('\n').slice(1).map((text, i) => ({ importId: imported.id, line: i + 2, text })) });
    await db().subscriber.createMany({ data: Array.from({ length: 10 }, (_, i) => ({ listId: f.list.id, email: `p${i}@example.com`, status: 'active' as const })) });
    await db().list.update({ where: { id: f.list.id }, data: { subscriberCount: 10 } });
    await db().import.update({ where: { id: imported.id }, data: { status: 'running', cursor: 11, added: 10 } });
    expect(await queue(QUEUE.imports).getJob(`imp-${imported.id}`)).toBeUndefined();
    expect(await requeueImports(db())).toBeGreaterThanOrEqual(1);
    const result = await finished(imported.id);
    expect(result).toMatchObject({ status: 'done', total: 30, added: 30, updated: 0, skipped: 0 });
    expect(await f.count()).toBe(30);
    // a run after it finished changes nothing
    expect(await runImport(db(), imported.id)).toBe('absent');
  });

  it('npm run admin -- import FILE --list ID: a progress bar on stderr, the report as JSON', async () => {
    const f = await listFixture(server.api, { confirm: false });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'import-')), 'people.csv');
    fs.writeFileSync(file, ['email,name', ...Array.from({ length: 200 }, (_, i) => `c${i}@example.com,C ${i}`), 'broken'].join('\n'));
    const proc = runTs('scripts/admin.ts', ['import', file, '--list', String(f.list.id)]);
    expect(await proc.exited).toBe(0);
    const answer = JSON.parse(proc.stdout());
    expect(answer).toEqual({ ok: true, import: expect.objectContaining({ list: f.list.id, status: 'done', total: 201, added: 200, skipped: 1, errors: [{ line: 202, reason: 'not an email address: "broken"' }] }) });
    expect(proc.stderr()).toMatch(/\[#{30}\] 100% 201\/201 lines {2}added 200/);
    expect(await f.count()).toBe(200);
    const shown = runTs('scripts/admin.ts', ['import', 'show', String(answer.import.id)]);
    expect(await shown.exited).toBe(0);
    expect(JSON.parse(shown.stdout())).toEqual({ ok: true, import: answer.import });
  }, 60_000);
});
