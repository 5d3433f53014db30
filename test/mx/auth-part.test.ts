import { checkResolver } from '../../apps/core/src/domains/resolver';
import { authenticate } from 'mailauth';
import { authenticatedPart, authenticateMessage, mxResolver, summary } from '../../apps/core/src/mx/auth';
import { DnsServer, txt } from '../helpers/dns-server';
import { dkimKey, message } from './support';

/**
 * The MX hands mailauth a message's header alone when no field of it signs the body (mx/auth.ts): the results must be
 * those of the whole message, for plain, signed and forged mail alike.
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

const whole = (raw: Buffer) => Buffer.concat([raw, Buffer.alloc(0)]);

it('reads the header alone of unsigned mail, and every byte of signed mail', async () => {
  const plain = Buffer.from(await message({ From: 'ann@plain.test', To: 'in@in.test', Subject: 'plain' }, 'Hello\nthere'));
  const part = authenticatedPart(plain);
  expect(part.toString()).toMatch(/Subject: plain\r\n\r\n$/);
  expect(part.length).toBeLessThan(plain.length);

  const signedRaw = Buffer.from(await message({ From: 'bob@signed.test', To: 'in@in.test', Subject: 'signed' }, 'Hello', { domain: 'signed.test', selector: 'mx2026', privateKey: key.privateKey }));
  expect(authenticatedPart(signedRaw)).toBe(signedRaw);
  const arc = Buffer.from(`ARC-Seal: i=1; a=rsa-sha256; cv=none; d=signed.test; s=mx2026; b=x\r\n${plain.toString()}`);
  expect(authenticatedPart(arc)).toBe(arc);
});

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
  // the whole message, as mailauth read it before: a copy, so that no field is taken for the header's own
  const fromWhole = summary(await authenticate(whole(raw), { ip: context.ip, helo: context.helo, sender: context.mailFrom, mta: context.mta, resolver: resolver as never, disableBimi: true }));
  expect(fromPart).toEqual(fromWhole);
  if (sign === 'signed.test') expect(fromPart.dkim[0]).toMatchObject({ result: 'pass' });
  // mailauth calls a body that no longer matches its hash "neutral" (RFC 6376 6.3 leaves it to the verifier)
  if (sign === 'tampered') expect(fromPart.dkim[0]).toMatchObject({ result: 'neutral' });
  if (headers.From.endsWith('strict.test')) expect(fromPart.dmarc).toEqual({ result: 'fail', policy: 'reject' });
});
