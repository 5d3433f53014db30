import { db } from '../../apps/core/src/db';
import { failImport, getImport, receiveImport, requeueImports, runImport } from '../../apps/core/src/imports';
import { queue, QUEUE } from '../../apps/core/src/queues';
import { useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';

/**
 * An import as the core receives and applies it (imports/store.ts and run.ts), without HTTP: the body arrives in chunks
 * cut anywhere (inside a line, inside a UTF-8 character), the lines are stored numbered, then applied. Real Postgres and
 * Redis; the job is run here by calling the processor's function.
 */
useApi();

async function list(options: { confirm?: boolean } = {}) {
  const tenant = await makeTenant();
  return makeList(tenant.account.id, tenant.mailbox.id, { confirm: options.confirm ?? false });
}

const stored = (importId: number) => db().importLine.findMany({ where: { importId }, orderBy: { line: 'asc' }, select: { line: true, text: true } });

describe('receiveImport', () => {
  it('stores the lines as they arrive, numbered from 1 with the header and blank lines counted, CRLF and a cut character mended', async () => {
    const l = await list();
    const body = Buffer.from('email,name\r\nann@example.com,Ann\r\n\r\n  \nbob@example.com,Bj\u00f6rn\nnul@example.com,a\0b\ncid@example.com,Cid');
    const at = body.indexOf(Buffer.from('\u00f6')) + 1;
    // cut inside the header, inside "ö" (two bytes), and the last line without its newline
    const chunks = [body.subarray(0, 3), body.subarray(3, at), body.subarray(at)];
    const view = await receiveImport(db(), l.id, 'csv', chunks);
    expect(view).toMatchObject({ list: l.id, status: 'queued', total: 4, processed: 0, added: 0, errors: [], finished_at: null });
    expect(Date.parse(view.created_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(await stored(view.id)).toEqual([
      { line: 2, text: 'ann@example.com,Ann' },
      { line: 5, text: 'bob@example.com,Bj\u00f6rn' },
      { line: 6, text: 'nul@example.com,a\uFFFDb' },
      { line: 7, text: 'cid@example.com,Cid' },
    ]);
    expect(await db().import.findUniqueOrThrow({ where: { id: view.id } })).toMatchObject({ received: true, columns: ['email', 'name'], format: 'csv', defaultStatus: null });
    expect(await queue(QUEUE.imports).getJob(`imp-${view.id}`)).toBeDefined();

    expect(await runImport(db(), view.id)).toBe('done');
    const done = await getImport(db(), view.id);
    expect(done).toMatchObject({ status: 'done', total: 4, processed: 4, added: 3, skipped: 1, errors: [{ line: 6, reason: 'not UTF-8 text, or holds a NUL byte' }], finished_at: expect.any(String) });
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: l.id, email: 'bob@example.com' } } })).toMatchObject({ name: 'Bj\u00f6rn' });
    expect(await stored(view.id)).toEqual([]);
  });

  it('stores a CSV record over several lines (a quoted line break) whole, under its first line, and applies it', async () => {
    const l = await list();
    // a byte order mark before the header, a quoted comma, an escaped quote, a quoted line break (CRLF) with a blank
    // line inside the quotes, and a record cut between chunks inside its quotes
    const body = '\uFEFFemail,name,tags\r\nann@example.com,"Ann, ""the pen""",a\r\nbob@example.com,"Bob\r\n\r\nBobson",b\r\n\r\ncid@example.com,"C\nid",c\n';
    const cut = body.indexOf('Bobson') - 3;
    const view = await receiveImport(db(), l.id, 'csv', [Buffer.from(body.slice(0, cut)), Buffer.from(body.slice(cut))]);
    expect(view.total).toBe(3);
    expect(await stored(view.id)).toEqual([
      { line: 2, text: 'ann@example.com,"Ann, ""the pen""",a' },
      { line: 3, text: 'bob@example.com,"Bob\n\nBobson",b' },
      { line: 7, text: 'cid@example.com,"C\nid",c' },
    ]);
    await runImport(db(), view.id);
    expect(await getImport(db(), view.id)).toMatchObject({ added: 3, errors: [] });
    const name = async (email: string) => (await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: l.id, email } } })).name;
    expect([await name('ann@example.com'), await name('bob@example.com'), await name('cid@example.com')]).toEqual(['Ann, "the pen"', 'Bob\n\nBobson', 'C\nid']);
  });

  it('an unterminated quote: its line is refused as one, with its number, and the lines after it are read', async () => {
    const l = await list();
    const lines = ['email,name', 'ann@example.com,Ann', 'bob@example.com,"Bob', 'cid@example.com,Cid', '"dan@example.com,Dan', ...Array.from({ length: 300 }, (_, i) => `p${i}@example.com,"P ${i}"`)];
    const view = await receiveImport(db(), l.id, 'csv', [lines.join('\n')]);
    // line 3's quote closes at the start of line 5 into text csv-parse refuses, line 5's on line 6: each line alone
    expect(await stored(view.id).then((rows) => rows.slice(0, 5))).toEqual([
      { line: 2, text: 'ann@example.com,Ann' },
      { line: 3, text: 'bob@example.com,"Bob' },
      { line: 4, text: 'cid@example.com,Cid' },
      { line: 5, text: '"dan@example.com,Dan' },
      { line: 6, text: 'p0@example.com,"P 0"' },
    ]);
    await runImport(db(), view.id);
    const done = await getImport(db(), view.id);
    expect(done).toMatchObject({ total: 304, added: 302, skipped: 2 });
    expect(done.errors).toEqual([
      { line: 3, reason: 'unterminated quote: a field opens with " on this line and its closing " is missing' },
      { line: 5, reason: 'unterminated quote: a field opens with " on this line and its closing " is missing' },
    ]);
  });

  it('a quote left open over 8,192 characters: its first line refused, the lines after it read again', async () => {
    const l = await list();
    const rest = Array.from({ length: 400 }, (_, i) => `q${i}@example.com,${'n'.repeat(30)}`);
    const view = await receiveImport(db(), l.id, 'csv', [['email,name', 'open@example.com,"Open', ...rest].join('\n')]);
    await runImport(db(), view.id);
    expect(await getImport(db(), view.id)).toMatchObject({
      total: 401,
      added: 400,
      errors: [{ line: 2, reason: 'unterminated quote: a field opens with " on this line and its closing " is missing' }],
    });
  });

  it('reads text chunks as they are, NDJSON without a header, and keeps the default status', async () => {
    const l = await list();
    const view = await receiveImport(db(), l.id, 'ndjson', ['{"email":"a@exa', 'mple.com"}\n{"email":"b@example.com","status":"unsubscribed"}\n'], { defaultStatus: 'active' });
    expect(await stored(view.id)).toEqual([
      { line: 1, text: '{"email":"a@example.com"}' },
      { line: 2, text: '{"email":"b@example.com","status":"unsubscribed"}' },
    ]);
    expect(await db().import.findUniqueOrThrow({ where: { id: view.id } })).toMatchObject({ columns: [], defaultStatus: 'active' });
  });

  it('refuses a CSV body without a header line, a bad header, a body without lines, and a missing list, storing nothing', async () => {
    const l = await list();
    const before = await db().import.count();
    await expect(receiveImport(db(), l.id, 'csv', [])).rejects.toMatchObject({ status: 400, message: 'csv: no header line (email,name,tags,status,consent_source,consent_at)' });
    await expect(receiveImport(db(), l.id, 'csv', ['\n\n'])).rejects.toMatchObject({ status: 400, message: 'csv: no header line (email,name,tags,status,consent_source,consent_at)' });
    await expect(receiveImport(db(), l.id, 'csv', ['email,email\na@example.com,b\n'])).rejects.toMatchObject({ status: 400, message: 'csv header: a column is named twice' });
    await expect(receiveImport(db(), l.id, 'csv', ['email\n', '\n  \n'])).rejects.toMatchObject({ status: 400, message: 'no lines to import' });
    await expect(receiveImport(db(), l.id, 'ndjson', [''])).rejects.toMatchObject({ status: 400, message: 'no lines to import' });
    await expect(receiveImport(db(), 2_000_000, 'csv', ['email\na@example.com\n'])).rejects.toMatchObject({ status: 404, message: 'no list with id 2000000' });
    expect(await db().import.count()).toBe(before);
  });

  it('reads up to maxBytes: a body of exactly the limit is taken, one byte more is a 413', async () => {
    const l = await list();
    const body = 'email\na@example.com\n';
    const limit = Buffer.byteLength(body);
    expect((await receiveImport(db(), l.id, 'csv', [Buffer.from(body)], { maxBytes: limit })).total).toBe(1);
    await expect(receiveImport(db(), l.id, 'csv', [Buffer.from(body), Buffer.from('b')], { maxBytes: limit })).rejects.toMatchObject({
      status: 413,
      message: `an import is at most ${limit} bytes (IMPORT_MAX_BYTES)`,
    });
  });

  it('getImport: a 404 for an import that is not there', async () => {
    await expect(getImport(db(), 2_000_000)).rejects.toMatchObject({ status: 404, message: 'no import with id 2000000' });
  });
});

describe('runImport and failImport', () => {
  it('keeps the first 1,000 refusals of a long import, across batches, and counts every line', async () => {
    const l = await list();
    const lines = ['email', ...Array.from({ length: 2_500 }, (_, i) => `bad${i}`), 'good@example.com'];
    const view = await receiveImport(db(), l.id, 'csv', [lines.join('\n')]);
    expect(await runImport(db(), view.id)).toBe('done');
    const done = await getImport(db(), view.id);
    expect(done).toMatchObject({ total: 2_501, processed: 2_501, skipped: 2_500, added: 1 });
    expect(done.errors).toHaveLength(1_000);
    expect(done.errors[0]).toEqual({ line: 2, reason: 'not an email address: "bad0"' });
    expect(done.errors[999]).toEqual({ line: 1_001, reason: 'not an email address: "bad999"' });
  });

  it('runs only a received import that is queued or running, once', async () => {
    const l = await list();
    const unreceived = await db().import.create({ data: { listId: l.id, format: 'csv', columns: ['email'] } });
    expect(await runImport(db(), unreceived.id)).toBe('absent');
    expect(await runImport(db(), 2_000_000)).toBe('absent');
    const view = await receiveImport(db(), l.id, 'csv', ['email\na@example.com\n']);
    expect(await runImport(db(), view.id)).toBe('done');
    expect(await runImport(db(), view.id)).toBe('absent');
  });

  it('a list with double opt-in: lines without a status are pending, one saying active is not asked', async () => {
    const l = await list({ confirm: true });
    const view = await receiveImport(db(), l.id, 'csv', ['email,status\nask@example.com,\nsure@example.com,active\nask@example.com,\n']);
    expect(await runImport(db(), view.id)).toBe('done');
    // the second line of ask@ finds the person it added (it was counted added twice)
    expect(await getImport(db(), view.id)).toMatchObject({ added: 2, updated: 1, skipped: 0 });
    const status = async (email: string) => (await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: l.id, email } } })).status;
    expect(await status('ask@example.com')).toBe('pending');
    expect(await status('sure@example.com')).toBe('active');
    expect((await db().list.findUniqueOrThrow({ where: { id: l.id } })).subscriberCount).toBe(1);
  });

  it('an address repeated in one batch: its lines applied in order to one subscriber', async () => {
    const l = await list();
    const view = await receiveImport(db(), l.id, 'csv', ['email,name,tags,status\nrep@example.com,First,a,\nrep@example.com,Second,b,\nrep@example.com,,c,unsubscribed\n']);
    expect(await runImport(db(), view.id)).toBe('done');
    expect(await getImport(db(), view.id)).toMatchObject({ added: 1, updated: 2, skipped: 0 });
    expect(await db().subscriber.findUniqueOrThrow({ where: { listId_email: { listId: l.id, email: 'rep@example.com' } } })).toMatchObject({ name: 'Second', tags: ['a', 'b', 'c'], status: 'unsubscribed' });
    expect((await db().list.findUniqueOrThrow({ where: { id: l.id } })).subscriberCount).toBe(0);
  });

  it('failImport: a queued or running import fails with the reason as its last error; a finished one keeps its status', async () => {
    const l = await list();
    const view = await receiveImport(db(), l.id, 'csv', ['email\na@example.com\n']);
    await failImport(db(), view.id, 'database gone');
    expect(await getImport(db(), view.id)).toMatchObject({ status: 'failed', finished_at: expect.any(String), errors: [{ line: 0, reason: 'the import stopped: database gone' }] });
    expect(await runImport(db(), view.id)).toBe('absent');
    const done = await receiveImport(db(), l.id, 'csv', ['email\nb@example.com\n']);
    await runImport(db(), done.id);
    await failImport(db(), done.id, 'late');
    expect(await getImport(db(), done.id)).toMatchObject({ status: 'done' });
  });

  it('housekeeping queues again a received import whose job is gone, and leaves a finished one', async () => {
    const l = await list();
    const view = await receiveImport(db(), l.id, 'csv', ['email\na@example.com\n']);
    await (await queue(QUEUE.imports).getJob(`imp-${view.id}`))!.remove();
    const finished = await receiveImport(db(), l.id, 'csv', ['email\nb@example.com\n']);
    await runImport(db(), finished.id);
    await (await queue(QUEUE.imports).getJob(`imp-${finished.id}`))?.remove();
    const recent = await db().import.create({ data: { listId: l.id, format: 'csv', columns: ['email'], createdAt: new Date(Date.now() - 3_000_000) } });
    const open = await db().import.count({ where: { received: true, status: { in: ['queued', 'running'] } } });
    expect(open).toBeGreaterThanOrEqual(1);
    expect(await requeueImports(db())).toBe(open);
    expect(await queue(QUEUE.imports).getJob(`imp-${view.id}`)).toBeDefined();
    expect(await queue(QUEUE.imports).getJob(`imp-${finished.id}`)).toBeUndefined();
    // an upload still arriving (under an hour old) is left alone
    expect(await db().import.findUnique({ where: { id: recent.id } })).not.toBeNull();
  });
});
