import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { dkimSignatures, relaxedBody, relaxedHeader } from '../../apps/core/src/domains/dkim';
import { generateKeyPairs, signingKeys } from '../../apps/core/src/domains/keys';
import { expectedRecords } from '../../apps/core/src/domains/records';
import { ONE_WRITE_BYTES, SIGNED_HEADERS, signOnTheWay, wireStream, type WireSignedMail } from '../../apps/core/src/domains/sending';
import type { ReceivedMail } from '../helpers/smtp-sink';
import { useDns } from '../helpers/dns-server';
import { published, receiverVerdict, signatures } from './support';

// the worker's signer (domains/dkim.ts) with keys made and parsed as the service makes them (keys.ts), checked by
// receivers against the records the service asks for, published in a real DNS server
const pair = generateKeyPairs('k1');
const keys = signingKeys(pair);
const dns = useDns(
  ['sign.test'],
  published(expectedRecords({ domain: 'sign.test', keys: [{ ...pair, state: 'active', retiredAt: null }], relays: ['127.0.0.1'], spfInclude: '', returnPathTarget: null })),
);

/**
 * Mail::DKIM's verdict on the RSA signature (test/helpers/dkim-verify.pl): "selector algorithm result". Debian 12's
 * Mail::DKIM does not know Ed25519; both signatures sign the same canonical headers, which its RSA check proves.
 */
function mailDkim(signed: Buffer): string[] {
  const out = execFileSync('perl', [path.join(__dirname, '../helpers/dkim-verify.pl'), String(dns.port)], { input: signed });
  return out.toString().trim().split('\n').filter((line) => line.includes(' rsa-sha256 '));
}

/** The email signed, as two receivers see it: mailauth's results and Mail::DKIM's. */
async function verdictOf(raw: Buffer) {
  const signed = Buffer.concat([Buffer.from(dkimSignatures(raw, 'sign.test', keys, SIGNED_HEADERS), 'latin1'), raw]);
  return { mailauth: signatures(await receiverVerdict(dns, { raw: signed } as ReceivedMail, 'news@sign.test')), mailDkim: mailDkim(signed) };
}

const bothPass = {
  mailauth: [
    { selector: 'k1r', algorithm: 'rsa-sha256', result: 'pass', domain: 'sign.test' },
    { selector: 'k1e', algorithm: 'ed25519-sha256', result: 'pass', domain: 'sign.test' },
  ],
  mailDkim: ['k1r rsa-sha256 pass'],
};

it('an email as the worker builds it (alternatives, an attachment, a long folded subject, non-ASCII names) passes RSA and Ed25519', async () => {
  const raw = await new MailComposer({
    from: { name: 'Zoë Ångström', address: 'news@sign.test' },
    to: 'a@example.com, b@example.com',
    subject: `A subject long enough to be folded by the composer ${'and more words '.repeat(8)}— with a dash`,
    text: 'Hello  there,\t\tfriend   \n\nLast line with spaces   \n\n\n',
    html: '<p>Hello <b>there</b></p>',
    headers: { 'List-Unsubscribe': '<https://sign.test/u/1>' },
    attachments: [{ filename: 'data.bin', content: crypto.randomBytes(3000) }],
  })
    .compile()
    .build();
  expect(await verdictOf(raw)).toEqual(bothPass);
});

it('a client MIME kept as written: tabs and runs of spaces in headers, a header given twice, trailing blank lines, bare LF endings, an empty body', async () => {
  const crlf = [
    'From:   Sender  Name\t <news@sign.test>  ',
    'To: a@example.com',
    'Subject: \tspaced\t  out  ',
    'Subject: the second one counts too',
    'X-Not-Signed: anything',
    'Date: Fri, 27 Nov 2026 00:00:00 +0000',
    'Message-ID: <x1@sign.test>',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'body line one   ',
    '  indented\t\tline',
    '',
    '   ',
    '',
    '',
  ].join('\r\n');
  expect(await verdictOf(Buffer.from(crlf, 'latin1'))).toEqual(bothPass);
  expect(await verdictOf(Buffer.from(crlf.replace(/\r\n/g, '\n'), 'latin1'))).toEqual(bothPass);
  const empty = 'From: news@sign.test\r\nTo: a@example.com\r\nSubject: nothing\r\n\r\n';
  expect(await verdictOf(Buffer.from(empty, 'latin1'))).toEqual(bothPass);
});

it('raw UTF-8 in a header (SMTPUTF8) is signed byte for byte: 0xA0, the last byte of "à" and "Р", is not whitespace', async () => {
  const utf8 = Buffer.from('From: news@sign.test\r\nTo: a@example.com\r\nSubject: voilà Рим à\r\n\r\nça va\r\n', 'utf8');
  const verdict = await verdictOf(utf8);
  // RFC 6376 section 3.4.2 folds SP and HTAB only, as Mail::DKIM (and OpenDKIM) do; mailauth's verifier also takes
  // 0xA0 for whitespace (its formatRelaxedLine uses \s on the bytes), so it alone disagrees on such a header
  expect(verdict.mailDkim).toEqual(bothPass.mailDkim);
  expect(verdict.mailauth.map((r) => r.result)).toEqual(['fail', 'fail']);
});

it('a changed byte of the body or of a signed header fails both signatures', async () => {
  const raw = Buffer.from('From: news@sign.test\r\nTo: a@example.com\r\nSubject: intact\r\n\r\nthe body\r\n', 'latin1');
  const signed = dkimSignatures(raw, 'sign.test', keys, SIGNED_HEADERS);
  const body = Buffer.from(signed + raw.toString('latin1').replace('the body', 'the b0dy'), 'latin1');
  const subject = Buffer.from(signed + raw.toString('latin1').replace('intact', 'changed'), 'latin1');
  for (const tampered of [body, subject]) {
    const results = signatures(await receiverVerdict(dns, { raw: tampered } as ReceivedMail, 'news@sign.test'));
    // mailauth says neutral for a body hash that does not match, fail for a signature that does not verify
    expect(results.map((r) => r.result)).toEqual(tampered === body ? ['neutral', 'neutral'] : ['fail', 'fail']);
    expect(mailDkim(tampered)).toEqual(['k1r rsa-sha256 fail']);
  }
});

it('signs the one-click unsubscribe headers (RFC 8058 section 4): both signatures cover List-Unsubscribe-Post, a changed one fails them', async () => {
  const raw = Buffer.from(
    'From: news@sign.test\r\nTo: a@example.com\r\nSubject: news\r\nList-Unsubscribe: <https://sign.test/u/1>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\nthe body\r\n',
    'latin1',
  );
  const signed = dkimSignatures(raw, 'sign.test', keys, SIGNED_HEADERS);
  const covered = [...signed.replace(/\r\n[ \t]+/g, '').matchAll(/[; ]h=([^;]+)/g)].map((m) => m[1]!.replace(/\s+/g, '').toLowerCase().split(':'));
  expect(covered).toEqual([expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']), expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post'])]);
  const tampered = Buffer.from(signed + raw.toString('latin1').replace('List-Unsubscribe=One-Click', 'nothing'), 'latin1');
  expect(signatures(await receiverVerdict(dns, { raw: tampered } as ReceivedMail, 'news@sign.test')).map((r) => r.result)).toEqual(['fail', 'fail']);
});

it('signs every header a receiver shows or acts on, when the email carries it', () => {
  const signedNames = ['from', 'sender', 'reply-to', 'subject', 'date', 'message-id', 'to', 'cc', 'mime-version', 'content-type', 'content-transfer-encoding', 'in-reply-to', 'references', 'list-id', 'list-unsubscribe', 'list-unsubscribe-post'];
  const header = signedNames.map((name) => `${name}: value of ${name}`).join('\r\n');
  const raw = Buffer.from(`${header}\r\nX-Mailer: not signed\r\n\r\nthe body\r\n`, 'latin1');
  const signed = dkimSignatures(raw, 'sign.test', keys, SIGNED_HEADERS);
  const covered = [...signed.replace(/\r\n[ \t]+/g, '').matchAll(/[; ]h=([^;]+)/g)].map((m) => m[1]!.replace(/\s+/g, '').toLowerCase().split(':').sort());
  expect(covered).toEqual([[...signedNames].sort(), [...signedNames].sort()]);
});

it('canonicalises as RFC 6376 section 3.4.5 shows', () => {
  // the RFC's example: "A: <SP> X <CRLF> B <SP> : <SP> Y <HTAB><CRLF> <HTAB> Z <SP><SP><CRLF>" and its body
  expect(relaxedHeader('A: X') + relaxedHeader('B : Y\t\r\n\tZ  ')).toBe('a:X\r\nb:Y Z\r\n');
  expect(relaxedBody(' C \r\nD \t E\r\n\r\n\r\n')).toBe(' C\r\nD E\r\n');
  expect(relaxedBody('')).toBe('');
  expect(relaxedBody('\r\n\r\n')).toBe('');
});

describe('signOnTheWay: the stream plugin that signs an email as nodemailer writes it (the worker sends this way)', () => {
  const transport = () => {
    const t = nodemailer.createTransport({ streamTransport: true, buffer: true });
    t.use('stream', signOnTheWay);
    return t;
  };
  const signed = (raw: Buffer) => dkimSignatures(raw, 'sign.test', keys, SIGNED_HEADERS);

  it('signs an email written in many pieces (a 300 kB attachment) over all of its bytes, and every byte arrives', async () => {
    const content = crypto.randomBytes(300_000);
    const mail: WireSignedMail = { from: 'news@sign.test', to: 'a@example.com', subject: 'Big', text: 'Hi', attachments: [{ filename: 'big.bin', content }], dkimOnTheWay: signed };
    const raw = (await transport().sendMail(mail)).message as Buffer;
    expect(signatures(await receiverVerdict(dns, { raw } as ReceivedMail, 'news@sign.test'))).toEqual(bothPass.mailauth);
    expect(mailDkim(raw)).toEqual(bothPass.mailDkim);
    const parsed = await simpleParser(raw);
    expect(parsed.attachments.map((a) => a.content.equals(content))).toEqual([true]);
  });

  it('leaves an email without keys as nodemailer writes it', async () => {
    const raw = (await transport().sendMail({ from: 'news@sign.test', to: 'a@example.com', subject: 'Plain', text: 'Hi' })).message as Buffer;
    expect(raw.toString('latin1')).not.toMatch(/dkim-signature/i);
    expect((await simpleParser(raw)).text?.trim()).toBe('Hi');
  });

  /** The pieces a stream gives, in order, each as its own 'data' event (as the SMTP connection's pipe takes them). */
  const pieces = (stream: Readable) =>
    new Promise<Buffer[]>((resolve, reject) => {
      const out: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => out.push(chunk));
      stream.once('end', () => resolve(out));
      stream.once('error', reject);
    });

  it('hands an unsigned email of a few kB to the wire as one piece, as nodemailer composed it', async () => {
    // without the plugin nodemailer streams the same email in many pieces: a write (and a system call) each
    const plain = nodemailer.createTransport({ streamTransport: true });
    const withPlugin = nodemailer.createTransport({ streamTransport: true });
    withPlugin.use('stream', signOnTheWay);
    const mail = { from: 'news@sign.test', to: 'a@example.com', subject: 'Copy', text: 'Hi '.repeat(300), html: `<p>${'Hi '.repeat(300)}</p>`, messageId: '<fixed@sign.test>', date: new Date('2026-11-30T00:00:00Z') };
    const composed = await pieces((await plain.sendMail(mail)).message as Readable);
    const written = await pieces((await withPlugin.sendMail(mail)).message as Readable);
    expect(composed.length).toBeGreaterThan(5);
    expect(written).toHaveLength(1);
    // the same bytes but for the MIME boundaries, which nodemailer draws at random for each composition
    const boundaries = (raw: Buffer) => raw.toString('latin1').replace(/--_NmP-[0-9a-f-]+/g, 'B').replace(/boundary="[^"]+"/g, 'b');
    expect(boundaries(written[0]!)).toBe(boundaries(Buffer.concat(composed)));
  });

  it('streams an unsigned email past ONE_WRITE_BYTES on as it comes, without holding it whole, every byte in order', async () => {
    const input = Array.from({ length: 100 }, (_, i) => Buffer.alloc(4096, i));
    const out = await pieces(wireStream(Readable.from(input)));
    expect(Buffer.concat(out).equals(Buffer.concat(input))).toBe(true);
    // the first ONE_WRITE_BYTES and a piece as one write, then each piece as it came
    expect(out[0]!.length).toBe(Math.ceil((ONE_WRITE_BYTES + 1) / 4096) * 4096);
    expect(out.length).toBe(1 + 100 - Math.ceil((ONE_WRITE_BYTES + 1) / 4096));
    expect(Math.max(...out.map((c) => c.length))).toBeLessThanOrEqual(ONE_WRITE_BYTES + 4096);
  });
});
