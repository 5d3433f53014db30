import type Mail from 'nodemailer/lib/mailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { wireMime } from '../../apps/core/src/delivery/wire-mime';

// the worker writes the common email's MIME itself (delivery/wire-mime.ts): its bytes must be nodemailer's, byte for
// byte, whatever the text, names, headers and bodies; only the random boundary differs
const BOUNDARY = /--_NmP-[0-9a-f]{16}-Part_1/g;

async function nodemailers(mail: Mail.Options): Promise<string> {
  return (await new MailComposer(mail).compile().build()).toString('latin1');
}

function ours(mail: Mail.Options): string {
  const raw = wireMime(mail);
  if (!raw) throw new Error(`not written here: ${JSON.stringify(mail).slice(0, 200)}`);
  return raw.toString('latin1');
}

async function expectSame(mail: Mail.Options): Promise<void> {
  const theirs = await nodemailers(mail);
  const mine = ours(mail);
  expect(mine.replace(BOUNDARY, 'B')).toBe(theirs.replace(BOUNDARY, 'B'));
  // the boundary is written the same length, so it folds the same
  expect(mine.match(BOUNDARY)?.length ?? 0).toBe(theirs.match(BOUNDARY)?.length ?? 0);
}

const date = new Date('2026-11-30T12:34:56Z');
const base = (extra: Partial<Mail.Options>): Mail.Options => ({
  from: { name: 'Acme', address: 'news@acme.example' },
  to: 'reader@example.com',
  envelope: { from: 'news@acme.example', to: ['reader@example.com'] },
  subject: 'Hello',
  messageId: '<a1b2@acme.example>',
  date,
  ...extra,
});

describe('wire MIME', () => {
  it('writes the shapes the service sends as nodemailer does', async () => {
    const url = 'https://acme.example/u/12345.abcdefabcdefabcdefabcdefabcdefab';
    const cases: Partial<Mail.Options>[] = [
      { text: 'Hello from the benchmark.' },
      { html: '<p>Hello</p>' },
      { html: `<p>Hello Reader 7, number 7.</p><p><a href="${url}">Unsubscribe</a></p>`, text: `Hello Reader 7, number 7.\n\nUnsubscribe [${url}]` },
      // a broadcast copy's list headers, prepared; a send's X- headers, plain
      {
        html: '<p>Hi</p>',
        text: 'Hi',
        headers: {
          'List-Unsubscribe': { prepared: true, value: `<${url}>` },
          'List-Unsubscribe-Post': { prepared: true, value: 'List-Unsubscribe=One-Click' },
          'List-Id': { prepared: true, value: '"bench" <bench.example.com>' },
        },
      },
      { text: 'x', headers: { 'x-campaign': 'spring', 'X-Note': 'héllo wörld', 'X-Long': 'word '.repeat(40), 'x-blank': '   ', 'X-Id': { value: 'plain ü' } } },
      { text: 'reply', replyTo: 'support@acme.example', inReplyTo: '<earlier@example.com>', references: '<first@example.com> <earlier@example.com>' },
      { text: 'refs', inReplyTo: 'bare@example.com', references: ['<a@x>', 'b@y'] },
      // names: plain, quoted, encoded; addresses: upper case, IDN, a quoted local part
      { text: 'n', from: { name: 'Ann & Bob "the best"', address: 'news@acme.example' } },
      { text: 'n', from: { name: 'Zoë Çelik', address: 'news@acme.example' } },
      { text: 'n', from: { name: '', address: 'news@acme.example' } },
      { text: 'n', from: { name: 'Лена Смирнова', address: 'news@acme.example' }, to: 'Reader@EXAMPLE.com' },
      { text: 'n', to: 'käse@bücher.de' },
      { text: 'n', to: 'reader@bücher.de' },
      { text: 'n', from: 'Plain Name <plain@acme.example>' },
      // subjects: long, unicode, mostly not latin, blank
      { text: 's', subject: 'A fairly long subject line that goes past the seventy-six characters a line may hold' },
      { text: 's', subject: 'Ünïcödé ☃ subject with an emoji 🎉 and more words to fold over the line' },
      { text: 's', subject: '日本語の件名です。とても長い件名を書いてみます。折り返しが必要になるまで続けます。' },
      { text: 's', subject: '   ' },
      { text: 's', subject: '' },
      { text: 's', subject: 'tab\there and a\r\nbreak' },
      // bodies: long lines, unicode (QP and base64), line ends, trailing whitespace, dots, '=' and control characters
      { text: 'x'.repeat(200) },
      { text: 'Ünïcödé text with a few accents, mostly latin.\nSecond line.' },
      { text: '日本語の本文です。'.repeat(30) },
      { html: '<p>“Smart quotes” — and a dash</p>\n'.repeat(20) },
      { text: 'ends with a space ' },
      { text: 'ends with tabs\t\t' },
      { text: 'ends with a newline\n' },
      { text: 'ends with CRLF\r\n' },
      { text: 'ends with CR\r' },
      { text: 'line one\r\nline two\nline three\rline four' },
      { text: 'trailing space before break \nnext' },
      { text: '.leading dot\n..two dots\n.' },
      { text: 'a=b and =3D and = at the end =' },
      { text: 'bell\u0007 and escape\u001b' },
      { text: ('word ').repeat(15) + 'ü' + ('y').repeat(90) },
      { text: 'x'.repeat(75) + '\n' + 'y'.repeat(76) + '\n' + 'z'.repeat(77) },
      { html: `<a href="${'https://example.com/'.repeat(10)}">link</a> ü ${'é'.repeat(40)}` },
      { text: 'both', html: '<b>both</b>', attachments: [] },
      { text: 'x'.repeat(60_000) + '\nü' },
    ];
    for (const extra of cases) await expectSame(base(extra));
  });

  it('writes random text the way nodemailer does', async () => {
    // a seeded generator: the same cases every run
    let seed = 42;
    const next = (n: number) => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const special = [' ', ' ', '\t', '\n', '\r\n', '\r', '.', '=', '-', 'é', 'ß', '☃', '🎉', '日', '\u0001', '"', '<', '>', ',', '@', '\\'];
    const latin = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', ...special];
    // mostly latin (quoted-printable), mostly not (base64), or plain ascii lines (7bit)
    const alphabets = [latin, special, [...'abcdefghij KLMNOP.,-', '\n']];
    let alphabet = latin;
    const text = (max: number) => Array.from({ length: next(max) }, () => alphabet[next(alphabet.length)]).join('');
    for (let i = 0; i < 300; i++) {
      alphabet = alphabets[i % alphabets.length]!;
      const words = () => text(120);
      await expectSame(
        base({
          subject: words(),
          from: { name: words().replace(/[\r\n]/g, ''), address: 'news@acme.example' },
          text: text(i % 10 === 0 ? 3_000 : 400) || 'text',
          html: i % 3 === 0 ? undefined : `<p>${text(600)}</p>`,
          headers: { 'X-Random': words().replace(/[\r\n]/g, ' ') },
        }),
      );
    }
  });

  it('leaves every other shape to nodemailer, whole', () => {
    const others: Partial<Mail.Options>[] = [
      { text: 'a', attachments: [{ filename: 'a.txt', content: 'YQ==', encoding: 'base64' }] },
      { raw: 'Subject: x\r\n\r\nbody' },
      { text: 'a', cc: 'other@example.com' },
      { text: 'a', headers: { 'Content-Type': 'text/plain' } },
      { text: 'a', headers: { subject: 'another' } },
      { text: 'a', headers: { 'X-List': ['one', 'two'] } },
      { text: 'a', headers: { 'X-Folded': { prepared: true, foldLines: true, value: 'v' } } },
      { text: 'a', headers: [{ key: 'X-A', value: 'b' }] },
      { text: 'x'.repeat(64 * 1024 + 1) },
      { text: undefined, html: undefined },
      { text: 'a', messageId: undefined },
      { text: 'a', date: undefined },
    ];
    for (const extra of others) expect(wireMime(base(extra))).toBeNull();
  });
});
