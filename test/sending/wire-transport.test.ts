import crypto from 'node:crypto';
import type Mail from 'nodemailer/lib/mailer';
import MimeNode from 'nodemailer/lib/mime-node';
import { db } from '../../apps/core/src/db';
import type { WireSignedMail } from '../../apps/core/src/domains/sending';
import { plainEnvelope, Transports } from '../../apps/core/src/delivery/transport';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { SmtpSink } from '../helpers/smtp-sink';

// the worker hands the common email to nodemailer's pool as its bytes, signed (delivery/transport.ts `send`): on the
// wire it must be what nodemailer's own sendMail would have sent, the signature made over the bytes that follow it
const BOUNDARY = /--_NmP-[0-9a-f]{16}-Part_1/g;
const sink = new SmtpSink();
let transports: Transports;

beforeAll(async () => {
  await sink.start();
  transports = new Transports(db(), () => undefined);
});
afterAll(async () => {
  transports.close();
  await sink.stop();
});

/** A stand-in signer: one header naming the hash of the bytes it was given. */
const hashSigner = (raw: Buffer) => `X-Signed: ${crypto.createHash('sha256').update(raw).digest('hex')}\r\n`;

function mailTo(to: string, from: string): WireSignedMail {
  return {
    from: { name: 'Sender', address: from },
    to,
    envelope: { from, to: [to] },
    subject: 'Hello ☃',
    text: 'Hello there, ü',
    html: '<p>Hello there, ü</p>',
    messageId: `<${crypto.randomUUID()}@example.com>`,
    date: new Date('2026-11-30T10:00:00Z'),
    headers: { 'List-Unsubscribe': { prepared: true, value: '<https://example.com/u/1>' } },
    dkimOnTheWay: hashSigner,
  };
}

describe('the worker transport', () => {
  it('puts the same envelope and bytes on the wire as nodemailer, signed over what follows the signature', async () => {
    const account = await makeAccount();
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: (await makeMailbox(account.id, { smtp: sink.url })).id } });
    const pool = transports.for(mailbox);
    const viaSendMail = jest.spyOn(pool, 'sendMail');

    const direct = mailTo('direct@example.org', mailbox.address);
    const info = await transports.send(mailbox, direct);
    expect(viaSendMail).not.toHaveBeenCalled();
    expect(info.response).toMatch(/^250/);
    expect(info.messageId).toBe(direct.messageId);
    expect(info.envelope).toEqual(direct.envelope);

    const theirs = mailTo('nodemailer@example.org', mailbox.address);
    await pool.sendMail(theirs);
    viaSendMail.mockRestore();

    const [ours] = sink.to('direct@example.org');
    const [nodemailers] = sink.to('nodemailer@example.org');
    expect(ours!.envelope).toEqual({ from: mailbox.address, to: ['direct@example.org'] });
    const wire = (mail: typeof ours, id: string, to: string) =>
      mail!.raw.toString('latin1').replace(BOUNDARY, 'B').replace(/^X-Signed: \w+\r\n/, 'X-Signed: S\r\n').replace(id, 'ID').replace(to, 'TO');
    expect(wire(ours, direct.messageId as string, 'direct@example.org')).toBe(wire(nodemailers, theirs.messageId as string, 'nodemailer@example.org'));
    for (const received of [ours!, nodemailers!]) {
      const raw = received.raw.toString('latin1');
      const signed = raw.slice(raw.indexOf('\r\n') + 2);
      expect(raw.slice(0, raw.indexOf('\r\n') + 2)).toBe(hashSigner(Buffer.from(signed, 'latin1')));
    }
    expect(ours!.parsed.text?.trim()).toBe('Hello there, ü');
    expect(ours!.parsed.subject).toBe('Hello ☃');
  });

  it('leaves an email whose envelope nodemailer would rewrite to sendMail', async () => {
    const account = await makeAccount();
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: (await makeMailbox(account.id, { smtp: sink.url })).id } });
    const pool = transports.for(mailbox);
    const viaSendMail = jest.spyOn(pool, 'sendMail');
    await transports.send(mailbox, mailTo('reader@bücher.example', mailbox.address));
    expect(viaSendMail).toHaveBeenCalledTimes(1);
    viaSendMail.mockRestore();
    expect(sink.messages.at(-1)!.envelope.to).toEqual([expect.stringMatching(/^reader@(xn--bcher-kva|bücher)\.example$/)]);
  });

  it('takes as plain only addresses nodemailer keeps as they are', () => {
    const plain = ['a@b.example', 'first.last+tag@mail.example.com', "o'brien@example.ie", 'bounces+0190f1c2-7a@send.example.org', 'x_y=z@xn--bcher-kva.example'];
    for (const address of plain) {
      const envelope = { from: address, to: [address] };
      expect(plainEnvelope(envelope)).toEqual(envelope);
      expect(new MimeNode().setEnvelope(envelope).getEnvelope()).toEqual(envelope);
    }
    const others: Mail.Options['envelope'][] = [
      { from: 'a@B.example', to: ['c@d.example'] },
      { from: 'a@b.example', to: ['c@bücher.example'] },
      { from: 'a@b.example', to: ['Name <c@d.example>'] },
      { from: 'a@b.example', to: ['c@d.example', 'e@f.example'] },
      { from: 'a@b.example', to: ['"quoted"@d.example'] },
      { from: 'a..b@b.example', to: ['c@d.example'] },
      { from: 'a@b.example', to: ['c@d.example'], cc: ['e@f.example'] } as Mail.Options['envelope'],
      undefined,
    ];
    for (const envelope of others) expect(plainEnvelope(envelope)).toBeNull();
  });
});
