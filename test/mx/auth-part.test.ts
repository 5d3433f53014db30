import { checkResolver } from '../../apps/core/src/domains/resolver';
import { authenticate } from 'mailauth';
import { authenticateMessage, keptResults, mxResolver, summary } from '../../apps/core/src/mx/auth';
import { DnsServer, txt } from '../helpers/dns-server';
import { dkimKey, message } from './support';

/**
 * The MX's authentication results (mx/auth.ts) must be mailauth's `authenticate` of the whole message, for plain,
 * signed and forged mail alike, though plain mail never reaches `authenticate`.
 */
const key = dkimKey();
const dns = new DnsServer(['plain.test', 'signed.test', 'strict.test']);
const session = { ip: '127.0.0.1', helo: 'client.test', mailFrom: 'ann@plain.test', mta: 'mx.test' };
let resolver: ReturnType<typeof mxResolver>;

beforeAll(async () => {
  await dns.start([
    txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all'),
    txt('_dmarc.plain.test', 'v=DMARC1; p=reject'),
    txt('mx2026._domainkey.signed.test', key.record),
    txt('_dmarc.signed.test', 'v=DMARC1; p=reject'),
    txt('_dmarc.strict.test', 'v=DMARC1; p=reject'),
  ]);
  resolver = mxResolver(checkResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] }).raw);
});
afterAll(() => dns.stop());

it.each([
  ['plain mail that passes SPF and DMARC', { From: 'ann@plain.test', To: 'in@in.test', Subject: 'plain' }, undefined, 'ann@plain.test'],
  ['mail signed by its From domain', { From: 'bob@signed.test', To: 'in@in.test', Subject: 'signed' }, 'signed.test', 'bob@signed.test'],
  ['mail whose body was changed after signing', { From: 'bob@signed.test', To: 'in@in.test', Subject: 'changed' }, 'tampered', 'bob@signed.test'],
  ['a forged From of a domain with p=reject', { From: 'ceo@strict.test', To: 'in@in.test', Subject: 'forged' }, undefined, 'ann@plain.test'],
] as const)('gives the results of the whole message for %s', async (_name, headers, sign, mailFrom) => {
  let raw = Buffer.from(await message(headers, 'Hello\nthere', sign ? { domain: 'signed.test', selector: 'mx2026', privateKey: key.privateKey } : undefined));
  if (sign === 'tampered') raw = Buffer.from(raw.toString().replace('Hello', 'Hullo'));
  const context = { ...session, mailFrom };
  const fromPart = await authenticateMessage(raw, context, resolver);
  const fromWhole = summary(await authenticate(raw, { ip: context.ip, helo: context.helo, sender: context.mailFrom, mta: context.mta, resolver: resolver as never, disableBimi: true }));
  expect(fromPart).toEqual(fromWhole);
  if (sign === 'signed.test') expect(fromPart.dkim[0]).toMatchObject({ result: 'pass' });
  // mailauth calls a body that no longer matches its hash "neutral" (RFC 6376 6.3 leaves it to the verifier)
  if (sign === 'tampered') expect(fromPart.dkim[0]).toMatchObject({ result: 'neutral' });
  if (headers.From.endsWith('strict.test')) expect(fromPart.dmarc).toEqual({ result: 'fail', policy: 'reject' });
});

/**
 * Plain mail is not handed to mailauth's `authenticate` at all (mx/auth.ts, unsignedResult): its SPF and DMARC checks
 * are called with what `authenticate` would give them. The answers must be the same for every From and envelope a
 * sender may write; the DNS is a table here, so each case reads the same records both ways.
 */
describe('plain mail without mailauth reading it', () => {
  const records: Record<string, string[]> = {
    'pass.test': ['v=spf1 ip4:127.0.0.1 -all'],
    '_dmarc.pass.test': ['v=DMARC1; p=reject'],
    'soft.test': ['v=spf1 ip4:10.9.9.9 ~all'],
    '_dmarc.soft.test': ['v=DMARC1; p=quarantine'],
    'mail.pass.test': ['v=spf1 ip4:127.0.0.1 -all'],
    'strict.test': ['v=spf1 ip4:127.0.0.1 -all'],
    '_dmarc.strict.test': ['v=DMARC1; p=reject; aspf=s'],
    'mail.strict.test': ['v=spf1 ip4:127.0.0.1 -all'],
    'client.test': ['v=spf1 ip4:127.0.0.1 -all'],
  };
  const table = async (name: string, type: string): Promise<unknown[]> => {
    const found = type === 'TXT' ? records[name.toLowerCase()] : undefined;
    if (!found) throw Object.assign(new Error(`${name} ${type}: not found`), { code: 'ENOTFOUND' });
    return found.map((value) => [value]);
  };
  const froms = [
    ['a bare address', 'From: ann@pass.test'],
    ['a display name', 'From: "Ann Example" <ann@pass.test>'],
    ['an encoded name', 'From: =?UTF-8?B?w4RubmNoZW4=?= <ann@pass.test>'],
    ['a raw UTF-8 name', 'From: Ännchen <ann@pass.test>'],
    ['two authors', 'From: Ann <ann@pass.test>, Bob <bob@soft.test>'],
    ['two From fields', 'From: ann@pass.test\r\nFrom: bob@soft.test'],
    ['a group', 'From: Team: ann@pass.test, bob@pass.test;'],
    ['a folded field', 'From: "Ann\r\n Example"\r\n <ann@pass.test>'],
    ['a comment', 'From: ann@pass.test (Ann)'],
    ['a space before its colon', 'From : ann@strict.test'],
    ['an upper-case name', 'FROM: ann@soft.test'],
    ['a strict domain', 'From: ann@strict.test'],
    ['no From', 'Sender: ann@pass.test'],
    ['an empty From', 'From: '],
  ] as const;
  const envelopes = [
    { ip: '127.0.0.1', helo: 'client.test', mailFrom: 'ann@pass.test' },
    { ip: '127.0.0.1', helo: 'client.test', mailFrom: 'bounce@mail.pass.test' },
    { ip: '127.0.0.1', helo: 'client.test', mailFrom: 'bounce@mail.strict.test' },
    { ip: '127.0.0.1', helo: '127.0.0.1', mailFrom: 'bob@soft.test' },
    { ip: '10.1.2.3', helo: '', mailFrom: 'ann@pass.test' },
    { ip: '127.0.0.1', helo: 'client.test', mailFrom: '' },
    { ip: '127.0.0.1', helo: '127.0.0.1', mailFrom: '' },
    { ip: '127.0.0.1', helo: '', mailFrom: '' },
  ];

  it.each(froms)('gives the answers of authenticate for %s', async (_name, from) => {
    const raw = Buffer.from(`${from}\r\nTo: in@in.test\r\nSubject: plain\r\n\r\nHello\r\n`);
    for (const envelope of envelopes) {
      const context = { ...envelope, mta: 'mx.test' };
      const fromWhole = summary(await authenticate(raw, { ip: context.ip, helo: context.helo, sender: context.mailFrom, mta: context.mta, resolver: table as never, disableBimi: true }));
      expect({ envelope, auth: await authenticateMessage(raw, context, table) }).toEqual({ envelope, auth: fromWhole });
    }
  });

  it('calls authenticate only for signed mail, ARC sets and headers it reads differently', async () => {
    const mailauth = require('mailauth') as typeof import('mailauth');
    const calls = jest.spyOn(mailauth, 'authenticate');
    try {
      const plain = Buffer.from('From: ann@pass.test\r\nSubject: plain\r\n\r\nHello\r\n');
      const context = { ...envelopes[0]!, mta: 'mx.test' };
      expect(await authenticateMessage(plain, context, table)).toEqual({
        spf: { result: 'pass' },
        dkim: [{ domain: '', selector: '', result: 'none' }],
        dmarc: { result: 'pass', policy: 'reject' },
        arc: { result: 'none' },
      });
      expect(calls).not.toHaveBeenCalled();
      for (const raw of [
        Buffer.from(`ARC-Authentication-Results: i=1; mx.other; spf=pass\r\n${plain.toString()}`),
        Buffer.from(`DKIM-Signature: v=1; a=rsa-sha256; d=pass.test; s=x; h=from; bh=x; b=x\r\n${plain.toString()}`),
        // a line that is neither a field nor a folded one; and a header with no empty line after it
        Buffer.from(`not a field\r\n${plain.toString()}`),
        Buffer.from('From: ann@pass.test\r\nSubject: plain\r\n'),
      ]) {
        calls.mockClear();
        await authenticateMessage(raw, context, table);
        expect(calls).toHaveBeenCalledTimes(1);
      }
    } finally {
      calls.mockRestore();
    }
  });
});

/**
 * A plain message's results are kept by all they are computed from, as long as the MX's resolver keeps the records they
 * were read from (mx/auth.ts, keptPlainResult): the next message of that sender is not worked out again, a message of
 * another sender, address or From is, and a temporary error is asked again.
 */
describe('plain results kept for a sender', () => {
  const plain = (from: string) => Buffer.from(`From: ${from}\r\nTo: in@in.test\r\nSubject: plain\r\n\r\nHello\r\n`);
  const envelope = { ip: '127.0.0.1', helo: 'client.test', mailFrom: 'ann@pass.test', mta: 'mx.test' };
  let down = false;
  const asked: string[] = [];
  const records: Record<string, string> = { 'pass.test': 'v=spf1 ip4:127.0.0.1 -all', '_dmarc.pass.test': 'v=DMARC1; p=reject' };
  const flaky = async (name: string, type: string): Promise<unknown[]> => {
    asked.push(`${type} ${name}`);
    if (down) throw Object.assign(new Error('timed out'), { code: 'ETIMEOUT' });
    const found = type === 'TXT' ? records[name.toLowerCase()] : undefined;
    if (!found) throw Object.assign(new Error(`${name} ${type}: not found`), { code: 'ENOTFOUND' });
    return [[found]];
  };
  /** one MX's resolver and the results it keeps */
  const mx = () => ({ resolver: mxResolver(flaky), kept: keptResults() });
  const check = (raw: Buffer, session: typeof envelope, m: ReturnType<typeof mx>) => authenticateMessage(raw, session, m.resolver, undefined, m.kept);

  it('works out the next message of the same sender once, and another sender anew', async () => {
    const mailauth = require('mailauth') as typeof import('mailauth');
    const spf = jest.spyOn(mailauth, 'spf');
    try {
      const one = mx();
      const first = await check(plain('ann@pass.test'), envelope, one);
      expect(first).toMatchObject({ spf: { result: 'pass' }, dmarc: { result: 'pass', policy: 'reject' } });
      expect(await check(plain('ann@pass.test'), envelope, one)).toEqual(first);
      expect(spf).toHaveBeenCalledTimes(1);
      // another client address, another envelope sender, another From: each its own
      expect(await check(plain('ann@pass.test'), { ...envelope, ip: '10.1.2.3' }, one)).toMatchObject({ spf: { result: 'fail' } });
      await check(plain('ann@pass.test'), { ...envelope, mailFrom: 'bob@pass.test' }, one);
      expect(await check(plain('ceo@other.test'), envelope, one)).toMatchObject({ dmarc: { result: 'none' } });
      expect(spf).toHaveBeenCalledTimes(4);
      // another MX keeps nothing of this one's; without kept results, nothing is kept
      await check(plain('ann@pass.test'), envelope, mx());
      await authenticateMessage(plain('ann@pass.test'), envelope, one.resolver);
      expect(spf).toHaveBeenCalledTimes(6);
    } finally {
      spf.mockRestore();
    }
  });

  it('does not keep a temporary error', async () => {
    const one = mx();
    down = true;
    try {
      expect(await check(plain('ann@pass.test'), envelope, one)).toMatchObject({ spf: { result: 'temperror' } });
    } finally {
      down = false;
    }
    asked.length = 0;
    expect(await check(plain('ann@pass.test'), envelope, one)).toMatchObject({ spf: { result: 'pass' }, dmarc: { result: 'pass' } });
    expect(asked).toContain('TXT pass.test');
  });
});
