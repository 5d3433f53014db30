import { MalformedMessage, decodeWords, foldLongField, prepareMessage } from '../../apps/core/src/submission/mime';

const prepare = (text: string) => prepareMessage(Buffer.from(text, 'utf8'), { id: 'abc', domain: 'example.com', now: new Date('2026-11-26T10:00:00Z') });

describe('a submitted message made ready to send', () => {
  it('keeps the message byte for byte when it has a Message-ID, a Date and no Bcc', () => {
    const text = 'From: "Shop" <shop@example.com>\r\nDate: Thu, 26 Nov 2026 10:00:00 +0000\r\nMessage-ID: <x@client>\r\nSubject: Hi\r\n\r\nbody \xe9\r\n';
    const prepared = prepare(text);
    expect(prepared.raw.equals(Buffer.from(text, 'utf8'))).toBe(true);
    expect(prepared).toMatchObject({ from: 'shop@example.com', fromName: 'Shop', subject: 'Hi', messageId: '<x@client>' });
  });

  it('removes every Bcc field (folded lines too), adds Message-ID and Date when missing, leaves the body alone', () => {
    const prepared = prepare('From: a@example.com\r\nBcc: x@y.example,\r\n  z@y.example\r\nSubject: S\r\nbcc: w@y.example\r\n\r\nBcc: in the body stays\r\n');
    const text = prepared.raw.toString();
    expect(text).toBe('Message-ID: <abc@example.com>\r\nDate: Thu, 26 Nov 2026 10:00:00 +0000\r\nFrom: a@example.com\r\nSubject: S\r\n\r\nBcc: in the body stays\r\n');
    expect(prepared.messageId).toBeNull();
    expect(prepared.messageIdHeader).toBe('<abc@example.com>');
    expect(prepare('From: a@example.com\r\nMessage-ID: <mine@client>\r\n\r\nx\r\n').messageIdHeader).toBe('<mine@client>');
    // a Message-ID folded over lines past 998 characters in all is refused (each copy is stored by it)
    expect(() => prepare(`From: a@example.com\r\nMessage-ID: <${'a'.repeat(600)}\r\n ${'b'.repeat(600)}@client>\r\n\r\nx\r\n`)).toThrow(/Message-ID is longer than 998/);
  });

  it('folds a header line over 998 characters after commas; refuses body lines over 998, bare LF, no From or two', () => {
    const to = Array.from({ length: 60 }, (_, i) => `reader${i}@example.org`).join(',');
    const prepared = prepare(`From: a@example.com\r\nTo: ${to}\r\nDate: x\r\nMessage-ID: <m@x>\r\n\r\nok\r\n`);
    const lines = prepared.raw.toString().split('\r\n');
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(998);
    expect(prepared.raw.toString().replace(/\r\n /g, '')).toContain(`To: ${to}`);
    expect(() => foldLongField(`X-Long: ${'a'.repeat(1200)}\r\n`)).toThrow(MalformedMessage);
    expect(() => prepare(`From: a@example.com\r\n\r\n${'b'.repeat(999)}\r\n`)).toThrow(/over 998/);
    expect(() => prepare('From: a@example.com\r\n\r\nline\nline\r\n')).toThrow(/bare LF/);
    expect(() => prepare('Subject: none\r\n\r\nx\r\n')).toThrow(/no From/);
    expect(() => prepare('From: a@example.com\r\nFrom: b@example.com\r\n\r\nx\r\n')).toThrow(/2 from fields/);
    expect(() => prepare('From: a@example.com, b@example.com\r\n\r\nx\r\n')).toThrow(/exactly one address/);
    expect(() => prepare('From: a@example.com\r\nnot a header line\r\n\r\nx\r\n')).toThrow(/malformed/);
  });

  it('decodes RFC 2047 words for the records', () => {
    expect(decodeWords('=?utf-8?B?SMOpbGxv?= =?UTF-8?Q?_w=C3=B6rld?=')).toBe('Héllo wörld');
    expect(decodeWords('=?iso-8859-1?Q?caf=E9?=')).toBe('café');
  });
});
