import { splitHeader } from '../../apps/core/src/mime-header';

/**
 * The one header splitter (apps/core/src/mime-header.ts) the DKIM signer and SMTP submission share: fields with their
 * folded lines, names lower-cased, where the header ends and the body starts with CRLF and with bare LF line breaks.
 */
const split = (text: string) => {
  const raw = Buffer.from(text, 'latin1');
  const header = splitHeader(raw);
  return { ...header, fields: header.fields.map((f) => [f.name, raw.toString('latin1', f.start, f.end)]), bodyText: raw.toString('latin1', header.body) };
};

describe('splitHeader', () => {
  it('reads fields with their folded lines (a space or a tab), names lower-cased without the spaces before the colon', () => {
    const text = 'From: a@example.com\r\nSubject: one\r\n two\r\n\tthree\r\nX-Tab : v\r\nTo: b@example.com\r\n\r\nbody\r\n';
    expect(split(text)).toEqual({
      fields: [
        ['from', 'From: a@example.com\r\n'],
        ['subject', 'Subject: one\r\n two\r\n\tthree\r\n'],
        ['x-tab', 'X-Tab : v\r\n'],
        ['to', 'To: b@example.com\r\n'],
      ],
      end: text.indexOf('\r\n\r\n') + 2,
      body: text.indexOf('body'),
      malformedAt: null,
      bodyText: 'body\r\n',
    });
  });

  it('ends the header at the first empty line, CRLF or bare LF, whichever comes first', () => {
    expect(split('A: 1\nB: 2\n\nbody\r\n\r\nmore')).toMatchObject({ fields: [['a', 'A: 1\n'], ['b', 'B: 2\n']], end: 10, body: 11, bodyText: 'body\r\n\r\nmore' });
    expect(split('A: 1\r\n\r\nbody\n\nmore')).toMatchObject({ fields: [['a', 'A: 1\r\n']], end: 6, body: 8, bodyText: 'body\n\nmore' });
    // a folded line is no empty line, even of spaces only
    expect(split('A: 1\r\n \r\nB: 2\r\n\r\nx')).toMatchObject({ fields: [['a', 'A: 1\r\n \r\n'], ['b', 'B: 2\r\n']], bodyText: 'x' });
  });

  it('an email starting with an empty line has no header; one without an empty line is all header and no body', () => {
    expect(split('\r\nbody')).toMatchObject({ fields: [], end: 0, body: 2, bodyText: 'body' });
    expect(split('\nbody')).toMatchObject({ fields: [], end: 0, body: 1, bodyText: 'body' });
    expect(split('A: 1\r\nB: 2')).toMatchObject({ fields: [['a', 'A: 1\r\n'], ['b', 'B: 2']], end: 10, body: 10, bodyText: '' });
    expect(split('')).toEqual({ fields: [], end: 0, body: 0, malformedAt: null, bodyText: '' });
  });

  it('says where the first line that is neither a field nor a fold is, and reads on past it', () => {
    expect(split('A: 1\r\nnot a field\r\nB: 2\r\n\r\n')).toMatchObject({ fields: [['a', 'A: 1\r\n'], ['b', 'B: 2\r\n']], malformedAt: 6 });
    expect(split(' folded first: x\r\nA: 1\r\n\r\n')).toMatchObject({ fields: [['a', 'A: 1\r\n']], malformedAt: 0 });
    expect(split('A: 1\r\nX Y: 2\r\n:empty\r\n\r\n')).toMatchObject({ fields: [['a', 'A: 1\r\n']], malformedAt: 6 });
    // a name is printable US-ASCII but the colon: a latin1 byte is not
    expect(split('A\xe9: 1\r\n\r\n')).toMatchObject({ fields: [], malformedAt: 0 });
  });
});
