import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { BadRequest } from '../../apps/core/src/errors';
import { csvRecord, csvRecords, type Line } from '../../apps/core/src/imports/csv';
import { LINE_MAX, parseHeader, parseLine, type Parsed } from '../../apps/core/src/imports/parse';

/**
 * An import's lines as the worker reads them (imports/parse.ts, docs/lists.md "Import"): each line becomes a row to
 * apply or the reason it is refused, on real CSV and NDJSON text. The HTTP path is in import.test.ts.
 */
const csv = (columns: string, text: string, defaultStatus: string | null = null): Parsed => parseLine('csv', parseHeader(columns), 7, text, defaultStatus);
const ndjson = (record: unknown, defaultStatus: string | null = null): Parsed => parseLine('ndjson', [], 7, typeof record === 'string' ? record : JSON.stringify(record), defaultStatus);
const refused = (reason: string) => ({ line: 7, reason });
const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

const UNTERMINATED = 'unterminated quote: a field opens with " on this line and its closing " is missing';
const AFTER_QUOTE = 'text after the closing " of a quoted field (write "" for a quote inside a quoted field)';

describe('csvRecord (csv-parse, RFC 4180)', () => {
  it.each([
    ['a,b', ['a', 'b']],
    ['', ['']],
    ['a,', ['a', '']],
    [',,', ['', '', '']],
    [' a , b ', ['a', 'b']],
    ['"a,b",c', ['a,b', 'c']],
    ['"say ""hi""",x', ['say "hi"', 'x']],
    ['  "quoted" ,x', ['quoted', 'x']],
    // spaces inside the quotes too (a name is stored trimmed whichever way it is written)
    ['" a ", b', ['a', 'b']],
    ['a"b,c', ['a"b', 'c']],
    ['"",x', ['', 'x']],
    ['"""",x', ['"', 'x']],
    // a quoted field holds line breaks (the lines of one record, as the store keeps them)
    ['a@example.com,"Ann\nSmith",x', ['a@example.com', 'Ann\nSmith', 'x']],
    ['"a\n\nb"', ['a\n\nb']],
    // records end at a line feed only: a carriage return is text (the export's formula guard writes one)
    ['"a@example.com",\'\rreturn', ['a@example.com', "'\rreturn"]],
  ])('%j -> %j', (line, fields) => {
    expect(csvRecord(line)).toEqual(fields);
  });

  it('reads a record without a quote as csv-parse does', () => {
    const options = { record_delimiter: '\n', relax_column_count: true, relax_quotes: true, trim: true };
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', 'b', ',', ' ', '\t', '\r', "'", '=', '\u00e9', '\uFEFF', '\u00a0'), maxLength: 40 }), (text) => {
        const byParse = (parse(text, options) as string[][])[0] ?? [''];
        expect(csvRecord(text)).toEqual(byParse.map((f) => f.trim()));
      }),
      { numRuns: 2_000 },
    );
  });

  it.each([
    ['"open, never closed', UNTERMINATED],
    ['a@example.com,"Ann', UNTERMINATED],
    ['"a"b,c', AFTER_QUOTE],
    ['a@example.com,"Ann" Jr,x', AFTER_QUOTE],
  ])('refuses %j: %s', (line, reason) => {
    expect(csvRecord(line)).toEqual({ reason });
  });
});

describe('csvRecords: a body\'s lines into records', () => {
  const records = async (text: string, max = 8_192) => {
    const lines = text.split('\n').map((t, i): Line => ({ line: i + 1, text: t }));
    const out: Line[] = [];
    for await (const record of csvRecords((async function* () { yield* lines; })(), max)) out.push(record);
    return out;
  };

  it('gives a line without a quote as it is, skips blank lines, and joins the lines of a quoted line break', async () => {
    expect(await records('email,name\n\n  \na@example.com,"Ann\n\nSmith"\nb@example.com,Bob\n"c@example.com",C')).toEqual([
      { line: 1, text: 'email,name' },
      { line: 4, text: 'a@example.com,"Ann\n\nSmith"' },
      { line: 7, text: 'b@example.com,Bob' },
      { line: 8, text: '"c@example.com",C' },
    ]);
  });

  it('keeps a line csv-parse refuses as it is (the worker says why)', async () => {
    expect(await records('"a"b,c\nd,e')).toEqual([
      { line: 1, text: '"a"b,c' },
      { line: 2, text: 'd,e' },
    ]);
  });

  it('an unterminated quote: its first line alone, the lines after it read again', async () => {
    // open at the end of the body
    expect(await records('a,"open\nb,B\nc,"C"')).toEqual([
      { line: 1, text: 'a,"open' },
      { line: 2, text: 'b,B' },
      { line: 3, text: 'c,"C"' },
    ]);
    // closed on a later line into text csv-parse refuses: line 1 alone, line 3 opens again and is read on
    expect(await records('a,"open\nb,B\n"c",C\nd,"x\ny"')).toEqual([
      { line: 1, text: 'a,"open' },
      { line: 2, text: 'b,B' },
      { line: 3, text: '"c",C' },
      { line: 4, text: 'd,"x\ny"' },
    ]);
    // closed and opened again on line 2, still open at the end: each line alone
    expect(await records('a,"x\nb" ,"y')).toEqual([
      { line: 1, text: 'a,"x' },
      { line: 2, text: 'b" ,"y' },
    ]);
    // still open past `max` characters (each line counted with its line break)
    expect(await records('a,"open\n12345\n12345\nb,B', 20)).toEqual([
      { line: 1, text: 'a,"open' },
      { line: 2, text: '12345' },
      { line: 3, text: '12345' },
      { line: 4, text: 'b,B' },
    ]);
    // open over exactly `max` characters (two lines: 6 + 4) and closed on the next line: one record; one more, refused
    expect(await records('a,"op\n123\nx"', 10)).toEqual([{ line: 1, text: 'a,"op\n123\nx"' }]);
    expect(await records('a,"op\n123\nx"', 9)).toEqual([
      { line: 1, text: 'a,"op' },
      { line: 2, text: '123' },
      { line: 3, text: 'x"' },
    ]);
  });
});

describe('parseHeader', () => {
  it('reads the columns in any order, lower-cased, a byte order mark dropped, the export-only ones accepted', () => {
    expect(parseHeader('\uFEFFName,EMAIL, tags ')).toEqual(['name', 'email', 'tags']);
    expect(parseHeader('email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at')).toHaveLength(9);
  });

  it.each([
    ['mail,name', 'csv header: unknown column "mail" (columns: email, name, tags, fields, status, consent_source, consent_at)'],
    ['email,name,age', 'csv header: unknown column "age" (columns: email, name, tags, fields, status, consent_source, consent_at)'],
    ['email,', 'csv header: unknown column "" (columns: email, name, tags, fields, status, consent_source, consent_at)'],
    ['name,tags', 'csv header: an "email" column is required (columns: email, name, tags, fields, status, consent_source, consent_at)'],
    ['email,name,Email', 'csv header: a column is named twice'],
    ['email,"name', `csv header: ${UNTERMINATED}`],
    // a byte order mark is taken off the start of the header only
    ['email,na\uFEFFme', 'csv header: unknown column "na\uFEFFme" (columns: email, name, tags, fields, status, consent_source, consent_at)'],
  ])('refuses %j with a 400: %s', (line, message) => {
    let thrown: unknown;
    try {
      parseHeader(line);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(BadRequest);
    expect(thrown).toMatchObject({ status: 400, message });
  });
});

describe('parseLine: CSV', () => {
  it('reads a full line: the address lower-cased and trimmed, tags split on ";", fields as JSON, consent kept', () => {
    const row = csv('email,name,tags,fields,status,consent_source,consent_at', ' Ann@Example.COM ,"Ann, Jr.", vip;2024 ;vip;;,"{""size"":12,""paying"":true}",unsubscribed, signup form ,2024-03-01T10:00:00Z');
    expect(row).toEqual({
      line: 7,
      email: 'ann@example.com',
      name: 'Ann, Jr.',
      tags: ['vip', '2024'],
      fields: { size: 12, paying: true },
      status: 'unsubscribed',
      consentSource: 'signup form',
      consentAt: new Date('2024-03-01T10:00:00Z'),
    });
  });

  it('leaves what the line does not say to the defaults: no name, no tags, no fields, the list decides, consent "import"', () => {
    expect(csv('email,name,tags,fields,status,consent_source,consent_at', 'a@example.com,,,,,,')).toEqual({
      line: 7,
      email: 'a@example.com',
      name: '',
      tags: [],
      fields: {},
      status: null,
      consentSource: 'import',
      consentAt: null,
    });
    // fewer fields than the header names: the rest are empty
    expect(csv('email,name,tags', 'a@example.com')).toMatchObject({ email: 'a@example.com', name: '', tags: [] });
  });

  it('refuses a line with more fields than the header names, and takes one with as many', () => {
    expect(csv('email,name', 'a@example.com,Ann,extra')).toEqual(refused('3 fields, the header names 2'));
    expect(csv('email', 'a@example.com,')).toEqual(refused('2 fields, the header names 1'));
    // a comma inside quotes is no field of its own
    expect(csv('email,name', 'a@example.com,"Ann, Jr."')).toMatchObject({ name: 'Ann, Jr.' });
    expect(csv('email,name', 'a@example.com,Ann')).toMatchObject({ email: 'a@example.com', name: 'Ann' });
  });

  it('takes off the export\'s guard against spreadsheet formulas, and only that', () => {
    for (const [written, read] of [
      ["'=SUM(A1)", '=SUM(A1)'],
      ["'+plus", '+plus'],
      ["'-minus", '-minus'],
      ["'@at", '@at'],
      ["'\ttab", 'tab'],
      ["'\rreturn", 'return'],
      ["'plain", "'plain"],
      ["O'=Brien", "O'=Brien"],
      ["''=x", "''=x"],
    ]) {
      expect({ written, name: (csv('email,name', `a@example.com,${written}`) as { name: string }).name }).toEqual({ written, name: read });
    }
    expect(csv('email,name', "'-cid@example.com,x")).toMatchObject({ email: '-cid@example.com' });
  });

  it('refuses a line csv-parse cannot read with what is wrong with it, not as a bad address', () => {
    expect(csv('email,name', 'a@example.com,"Ann')).toEqual(refused(UNTERMINATED));
    expect(csv('email,name', '"a@example.com,Ann')).toEqual(refused(UNTERMINATED));
    expect(csv('email,name', '"a@example.com"x,Ann')).toEqual(refused(AFTER_QUOTE));
    // a quoted line break, a quoted comma and an escaped quote, in one record
    expect(csv('email,name,tags', 'a@example.com,"Ann ""The Pen"", Jr.\nSecond line",vip')).toMatchObject({ name: 'Ann "The Pen", Jr.\nSecond line', tags: ['vip'] });
  });

  it('refuses fields that are not a JSON object', () => {
    expect(csv('email,fields', 'a@example.com,{not json')).toEqual(refused('fields must be a JSON object'));
    expect(csv('email,fields', 'a@example.com,[1]')).toEqual(refused('fields must be a JSON object'));
    expect(csv('email,fields', 'a@example.com,"""text"""')).toEqual(refused('fields must be a JSON object'));
    expect(csv('email,fields', 'a@example.com,12')).toEqual(refused('fields must be a JSON object'));
    expect(csv('email,fields', 'a@example.com,"{""a"":[1]}"')).toEqual(refused('a must be a string, a number or a boolean'));
  });

  it('refuses a line longer than LINE_MAX characters, and takes one of exactly LINE_MAX', () => {
    const address = 'a@example.com';
    expect(csv('email', address + ' '.repeat(LINE_MAX - address.length))).toMatchObject({ email: address });
    expect(csv('email', address + ' '.repeat(LINE_MAX + 1 - address.length))).toEqual(refused('the line is longer than 8192 characters'));
  });

  it('refuses a line the API stored with U+FFFD (bytes that are not UTF-8, or a NUL)', () => {
    expect(csv('email,name', 'a@example.com,An\uFFFDn')).toEqual(refused('not UTF-8 text, or holds a NUL byte'));
  });

  it('holds at most 20 tags (after repeats and blanks are dropped), each of at most 100 characters', () => {
    expect(csv('email,tags', `a@example.com,${tags(20).join(';')}`)).toMatchObject({ tags: tags(20) });
    expect(csv('email,tags', `a@example.com,${tags(21).join(';')}`)).toEqual(refused('more than 20 tags'));
    expect(csv('email,tags', `a@example.com,${[...tags(20), 't0', ' t1 ', '', ' '].join(';')}`)).toMatchObject({ tags: tags(20) });
    expect(csv('email,tags', `a@example.com,${'x'.repeat(100)}`)).toMatchObject({ tags: ['x'.repeat(100)] });
    expect(csv('email,tags', `a@example.com,ok;${'x'.repeat(101)}`)).toEqual(refused('a tag is longer than 100 characters'));
  });
});

describe('parseLine: NDJSON', () => {
  it('reads an object, tags as an array, and an export-only key read past', () => {
    expect(ndjson({ email: 'Eve@Example.com', name: ' Eve ', tags: ['a', ' b '], fields: { n: 1 }, status: 'bounced', created_at: '2024-01-01T00:00:00Z' })).toEqual({
      line: 7,
      email: 'eve@example.com',
      name: 'Eve',
      tags: ['a', 'b'],
      fields: { n: 1 },
      status: 'bounced',
      consentSource: 'import',
      consentAt: null,
    });
    expect(ndjson({ email: 'a@example.com', fields: null, tags: null, name: null, status: null, consent_at: null })).toMatchObject({ fields: {}, tags: [], name: '', status: null, consentAt: null });
  });

  it.each([
    ['{not json', 'not JSON'],
    ['null', 'not a JSON object'],
    ['[{"email":"a@example.com"}]', 'not a JSON object'],
    ['"a@example.com"', 'not a JSON object'],
    ['12', 'not a JSON object'],
    ['{"email":"a@example.com","mail":"x"}', 'unknown key "mail"'],
  ])('refuses %s: %s', (line, reason) => {
    expect(ndjson(line)).toEqual(refused(reason));
  });

  it('refuses values of the wrong kind', () => {
    expect(ndjson({ email: 'a@example.com', name: 5 })).toEqual(refused('name must be text'));
    expect(ndjson({ email: 'a@example.com', consent_source: ['x'] })).toEqual(refused('consent_source must be text'));
    expect(ndjson({ email: 'a@example.com', tags: 'a;b' })).toEqual(refused('tags must be a list of text'));
    expect(ndjson({ email: 'a@example.com', tags: ['a', 2] })).toEqual(refused('tags must be a list of text'));
    expect(ndjson({ email: 'a@example.com', fields: ['x'] })).toEqual(refused('fields must be a JSON object'));
    expect(ndjson({ email: 'a@example.com', fields: 'x' })).toEqual(refused('fields must be a JSON object'));
    expect(ndjson({ email: 'a@example.com', consent_at: 1_700_000_000_000 })).toEqual(refused('consent_at must be an ISO 8601 date or time'));
  });

  it('holds at most 20 tags', () => {
    expect(ndjson({ email: 'a@example.com', tags: tags(20) })).toMatchObject({ tags: tags(20) });
    expect(ndjson({ email: 'a@example.com', tags: tags(21) })).toEqual(refused('more than 20 tags'));
  });
});

describe('parseLine: the address, texts, status and consent', () => {
  it.each([
    [{}, 'no email address'],
    [{ email: '' }, 'no email address'],
    [{ email: '   ' }, 'no email address'],
    [{ email: 42 }, 'no email address'],
    [{ email: 'not-an-address' }, 'not an email address: "not-an-address"'],
    [{ email: `${'x'.repeat(300)}@` }, `not an email address: "${'x'.repeat(100)}"`],
  ])('refuses %j: %s', (record, reason) => {
    expect(ndjson(record)).toEqual(refused(reason));
  });

  it('counts a name and a consent source in characters, not UTF-16 units, after trimming', () => {
    const emoji = '\u{1F600}';
    expect(ndjson({ email: 'a@example.com', name: ` ${emoji.repeat(200)} ` })).toMatchObject({ name: emoji.repeat(200) });
    expect(ndjson({ email: 'a@example.com', name: 'n'.repeat(201) })).toEqual(refused('name is longer than 200 characters'));
    expect(ndjson({ email: 'a@example.com', consent_source: emoji.repeat(100) })).toMatchObject({ consentSource: emoji.repeat(100) });
    expect(ndjson({ email: 'a@example.com', consent_source: 's'.repeat(101) })).toEqual(refused('consent_source is longer than 100 characters'));
  });

  it('takes the five line statuses, an empty one as none, and refuses any other', () => {
    for (const status of ['active', 'pending', 'unsubscribed', 'bounced', 'complained']) expect(ndjson({ email: 'a@example.com', status })).toMatchObject({ status });
    expect(ndjson({ email: 'a@example.com', status: '' })).toMatchObject({ status: null });
    expect(ndjson({ email: 'a@example.com', status: 'confirmed' })).toEqual(refused('status must be one of active, pending, unsubscribed, bounced, complained'));
    expect(ndjson({ email: 'a@example.com', status: 1 })).toEqual(refused('status must be one of active, pending, unsubscribed, bounced, complained'));
  });

  it("gives a line without a status the import's default, and never overrides one the line gives", () => {
    expect(csv('email,status', 'a@example.com,', 'active')).toMatchObject({ status: 'active' });
    expect(csv('email,status', 'a@example.com,unsubscribed', 'active')).toMatchObject({ status: 'unsubscribed' });
    expect(ndjson({ email: 'a@example.com' }, 'pending')).toMatchObject({ status: 'pending' });
    expect(ndjson({ email: 'bad' }, 'pending')).toEqual(refused('not an email address: "bad"'));
  });

  it('reads consent_at as an ISO 8601 date or time, at most a day ahead', () => {
    expect(ndjson({ email: 'a@example.com', consent_at: '2024-03-01' })).toMatchObject({ consentAt: new Date('2024-03-01') });
    expect(ndjson({ email: 'a@example.com', consent_at: '' })).toMatchObject({ consentAt: null });
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    expect(ndjson({ email: 'a@example.com', consent_at: soon })).toMatchObject({ consentAt: new Date(soon) });
    // words before the date (which Date would read past) and a date in a list are refused too
    for (const consent_at of ['March 1, 2024', '1 2024-03-01', 'Fri 2024-03-01', 'on 2024-03-01', '2024-13-45', '2024-3-1', 'yesterday', ['2024-03-01']]) {
      expect({ consent_at, parsed: ndjson({ email: 'a@example.com', consent_at }) }).toEqual({ consent_at, parsed: refused('consent_at must be an ISO 8601 date or time') });
    }
    const later = new Date(Date.now() + 2 * 86_400_000).toISOString();
    expect(ndjson({ email: 'a@example.com', consent_at: later })).toEqual(refused('consent_at is in the future'));
  });
});
