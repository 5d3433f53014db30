import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { makeTenant } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { useMail } from '../helpers/mail';
import { PgProxy } from '../helpers/pg-proxy';
import { waitFor } from '../helpers/wait';
import { runClient } from '../smtp/support';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';
import { verpAddress } from '../../apps/core/src/delivery/verp';
import { dkimKey, inboundDomain, message, signed, useMx, withAttachment } from './support';

/**
 * The MX (docs/mx.md) against real parts: dnsmasq answers the senders' SPF, DKIM and DMARC records, swaks
 * and nodemailer speak SMTP to it, the worker's dispatcher and webhook queue deliver `inbound.received` to a real
 * receiver that checks the Standard Webhooks signature.
 */
const signing = dkimKey();
const dns = useDns(['signed.test', 'strict.test', 'soft.test'], [
  txt('signed.test', 'v=spf1 ip4:127.0.0.1 -all'),
  txt('_dmarc.signed.test', 'v=DMARC1; p=reject'),
  txt('mx2026._domainkey.signed.test', signing.record),
  txt('strict.test', 'v=spf1 ip4:192.0.2.1 -all'),
  txt('_dmarc.strict.test', 'v=DMARC1; p=reject'),
  txt('soft.test', 'v=spf1 ip4:192.0.2.1 -all'),
  txt('_dmarc.soft.test', 'v=DMARC1; p=quarantine'),
]);
const ctx = useApi();
const receiver = useReceiver();
useMail({ queues: ['webhook'] });
useDispatcher();
const MAX_BYTES = 200_000;
const mx = useMx(dns, { maxBytes: MAX_BYTES });
const proxy = new PgProxy();
beforeAll(() => proxy.start());
const cut = useMx(dns, { database: () => proxy.url() });
// a proxy left listening keeps the jest worker alive after the suite (in band: "Jest did not exit one second after the test run")
afterAll(() => proxy.stop());

const transport = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false } });
const send = (port: number, from: string, to: string[], raw: string | Buffer) => transport(port).sendMail({ envelope: { from, to }, raw });
const swaks = (port: number, args: string[]) => runClient('swaks', ['--server', `127.0.0.1:${port}`, '--helo', 'client.test', ...args]);
const rows = (accountId: number) => db().mxMessage.findMany({ where: { accountId }, orderBy: { receivedAt: 'asc' } });

describe('the MX', () => {
  it('a DKIM-signed message with an attachment reaches a webhook route as one signed inbound.received with its auth results, reply_text, hash, attachment and raw MIME', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-one.test', [{ match: 'support+*', action: 'webhook' }, { match: '*', action: 'hold' }]);
    const h = await hook(ctx.api, tenant.account.id, receiver, ['inbound.received']);
    const attachment = crypto.randomBytes(3000);
    const composed = await withAttachment(
      {
        from: 'Ann <ann@signed.test>',
        to: 'support+ticket-42@in-one.test',
        subject: 'Printer on fire',
        text: 'It is still burning.\n\nAnn\n\nOn Mon, 1 Jun 2026 at 10:00, Support <support@in-one.test> wrote:\n> Have you tried turning it off?\n',
      },
      { filename: 'photo.bin', content: attachment },
    );
    const raw = await signed(composed, { domain: 'signed.test', selector: 'mx2026', privateKey: signing.privateKey });
    const info = await send(mx.port, 'ann@signed.test', ['support+ticket-42@in-one.test'], raw);
    expect(info.response).toMatch(/^250 2\.0\.0 OK: [0-9a-f-]{36}$/);

    const [event] = await waitFor(() => (receiver.accepted('inbound.received', (d) => d.domain === 'in-one.test').length ? receiver.accepted('inbound.received', (d) => d.domain === 'in-one.test') : undefined), { timeout: 30_000, what: 'inbound.received' });
    expect(event!.verifiedBy).toEqual([h.secret]);
    const data = event!.data as Record<string, any>;
    expect(data).toMatchObject({
      route: tenant.routes[0]!.id,
      domain: 'in-one.test',
      hash: 'ticket-42',
      envelope: { from: 'ann@signed.test', to: ['support+ticket-42@in-one.test'] },
      from: 'ann@signed.test',
      to: ['support+ticket-42@in-one.test'],
      subject: 'Printer on fire',
      reply_text: 'It is still burning.\n\nAnn',
      auth: { spf: { result: 'pass' }, dkim: [{ domain: 'signed.test', selector: 'mx2026', result: 'pass' }], dmarc: { result: 'pass', policy: 'reject' }, arc: { result: 'none' } },
      attachments: [{ filename: 'photo.bin', content_type: 'application/octet-stream', size: 3000, url: expect.stringMatching(/\/inbound\/mx\//) }],
    });
    expect(data.text).toContain('Have you tried turning it off?');
    expect(data.headers).toEqual(expect.arrayContaining([{ name: 'subject', value: 'Printer on fire' }]));
    // the signed URLs serve the attachment and the raw MIME as received; an altered signature is 404
    const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');
    const file = await request(ctx.api.app).get(local(data.attachments[0].url)).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(file.status).toBe(200);
    expect(Buffer.compare(file.body as Buffer, attachment)).toBe(0);
    const rawRes = await request(ctx.api.app).get(local(data.raw_url));
    expect(rawRes.status).toBe(200);
    expect(rawRes.text).toContain('DKIM-Signature');
    expect((await request(ctx.api.app).get(local(data.raw_url).replace(/signature=./, 'signature=%21'))).status).toBe(404);

    // stored before the 250, with the client and HELO; one row, one event
    const stored = await rows(tenant.account.id);
    expect(stored).toEqual([expect.objectContaining({ id: data.id, status: 'delivered', clientAddress: '127.0.0.1', mailFrom: 'ann@signed.test', hash: 'ticket-42' })]);
    // as it came over SMTP: the signature's folded lines end in CRLF on the wire
    expect(Buffer.from(stored[0]!.raw).toString('latin1')).toBe(raw.toString('latin1').replace(/\r?\n/g, '\r\n'));
    const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'inbound.received' } });
    expect(events).toHaveLength(1);

    // replay sends it again as a new event
    expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${data.id}/replay`)).status).toBe(200);
    await waitFor(() => receiver.accepted('inbound.received', (d) => d.id === data.id).length === 2, { timeout: 30_000, what: 'the replay' });
  }, 60_000);

  it('refuses in the session: unknown recipient 550 5.1.1 at RCPT, a domain not set up 550 5.7.1, a reject route 550, oversize 552; nothing is stored', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-two.test', [{ match: 'sales', action: 'webhook' }, { match: 'spam', action: 'reject' }]);
    const unknown = await swaks(mx.port, ['--from', 'ann@signed.test', '--to', 'nobody@in-two.test']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.out).toMatch(/<\*\* 550 5\.1\.1 <nobody@in-two\.test>: no such recipient here/);
    expect(unknown.out).not.toMatch(/~> DATA/);
    const stranger = await swaks(mx.port, ['--from', 'ann@signed.test', '--to', 'someone@elsewhere.test']);
    expect(stranger.out).toMatch(/<\*\* 550 5\.7\.1 elsewhere\.test does not receive mail here/);
    const refused = await swaks(mx.port, ['--from', 'ann@signed.test', '--to', 'spam@in-two.test']);
    expect(refused.out).toMatch(/<\*\* 550 5\.7\.1 <spam@in-two\.test>: mail to this address is refused/);
    // a DATA past MX_MAX_BYTES is read to its end and refused (no bounce later)
    const body = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mx-big-')), 'body.txt');
    fs.writeFileSync(body, `${'x'.repeat(998)}\r\n`.repeat(Math.ceil(MAX_BYTES / 1000) + 5));
    const big = await swaks(mx.port, ['--from', 'ann@signed.test', '--to', 'sales@in-two.test', '--body', `@${body}`]);
    expect(big.out).toMatch(/<\*\* 552 5\.3\.4 the message is over 200000 bytes/);
    expect(await rows(tenant.account.id)).toEqual([]);
  }, 60_000);

  it('takes 100 recipients and answers 452 to the 101st; the message is stored once for its route', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-many.test', [{ match: '*', action: 'webhook' }]);
    const to = Array.from({ length: 101 }, (_, i) => `reader${i}@in-many.test`);
    const info = await send(mx.port, 'ann@signed.test', to, await message({ From: 'ann@signed.test', To: 'list@in-many.test', Subject: 'Many' }, 'Hello all', { domain: 'signed.test', selector: 'mx2026', privateKey: signing.privateKey }));
    expect(info.accepted).toHaveLength(100);
    expect(info.rejected).toEqual(['reader100@in-many.test']);
    expect(String((info.rejectedErrors?.[0] as { response?: string })?.response)).toMatch(/^452 4\.5\.3/);
    const stored = await rows(tenant.account.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.rcptTo).toHaveLength(100);
  }, 30_000);

  it('DMARC: a forged message from a p=reject domain is refused 550 5.7.1 at DATA; from p=quarantine it is held, shown, released once, or dropped', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-three.test', [{ match: 'ceo', action: 'webhook' }]);
    await hook(ctx.api, tenant.account.id, receiver, ['inbound.received']);
    const forged = await swaks(mx.port, ['--from', 'boss@strict.test', '--to', 'ceo@in-three.test', '--header', 'From: boss@strict.test', '--header', 'Subject: wire money']);
    expect(forged.out).toMatch(/<\*\* 550 5\.7\.1 the message fails DMARC/);
    expect(await rows(tenant.account.id)).toEqual([]);

    for (const subject of ['held one', 'held two']) {
      const soft = await swaks(mx.port, ['--from', 'boss@soft.test', '--to', 'ceo@in-three.test', '--header', 'From: boss@soft.test', '--header', `Subject: ${subject}`]);
      expect(soft.out).toMatch(/<- {1,2}250 2\.0\.0 OK: [0-9a-f-]{36}/);
    }
    const held = await asAdmin(ctx.api).get(`/admin/api/inbound?status=held&account=${tenant.account.id}`);
    expect(held.status).toBe(200);
    expect(held.body.messages).toHaveLength(2);
    expect(held.body.messages[0]).toMatchObject({ status: 'held', reason: 'dmarc quarantine', auth: { dmarc: { result: 'fail', policy: 'quarantine' }, spf: { result: 'fail' } } });
    const [two, one] = held.body.messages as { id: string; subject: string }[];
    expect(one!.subject).toBe('held one');
    expect(receiver.accepted('inbound.received', (d) => d.domain === 'in-three.test')).toEqual([]);

    expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${one!.id}/release`)).status).toBe(200);
    expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${one!.id}/release`)).status).toBe(404);
    expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${two!.id}/drop`)).status).toBe(200);
    await waitFor(() => receiver.accepted('inbound.received', (d) => d.id === one!.id).length === 1, { timeout: 30_000, what: 'the released message' });
    expect(receiver.accepted('inbound.received', (d) => d.id === one!.id)[0]!.data).toMatchObject({ subject: 'held one', auth: { dmarc: { result: 'fail' } } });
    expect((await db().mxMessage.findUniqueOrThrow({ where: { id: two!.id } })).status).toBe('dropped');
    expect(receiver.accepted('inbound.received', (d) => d.id === two!.id)).toEqual([]);
    expect((await asAdmin(ctx.api).post('/admin/api/inbound/not-a-uuid/drop')).status).toBe(400);
  }, 60_000);

  it('Postgres away: 451 4.3.0 and nothing half-written; the retry after it is back is taken', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-four.test', [{ match: 'ops', action: 'webhook' }]);
    proxy.cutOff();
    try {
      const away = await swaks(cut.port, ['--from', 'ann@signed.test', '--to', 'ops@in-four.test']);
      expect(away.out).toMatch(/<\*\* 451 4\.3\.0/);
    } finally {
      proxy.restore();
    }
    const back = await swaks(cut.port, ['--from', 'ann@signed.test', '--to', 'ops@in-four.test']);
    expect(back.out).toMatch(/<- {1,2}250 2\.0\.0 OK/);
    expect(await rows(tenant.account.id)).toHaveLength(1);
  }, 60_000);

  it('a report at a VERP return path goes through the inbound reader\'s proof and actions: the address is suppressed; a forged token is refused at RCPT', async () => {
    const tenant = await makeTenant();
    const id = crypto.randomUUID();
    await db().message.create({
      data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'transactional', to: 'gone@far.test', subject: 's', messageIdHeader: `<${id}@ours.test>`, status: 'sent', sentAt: new Date() },
    });
    const returnPath = verpAddress(tenant.mailbox.address, id);
    const dsn = dsnFor('gone@far.test', returnPath, `<${id}@ours.test>`);
    const forged = returnPath.replace(/\+b-[a-z2-7]{4}/, '+b-aaaa');
    const refused = await send(mx.port, '', [forged], dsn).catch((err: { response?: string }) => err);
    expect(String((refused as { response?: string }).response)).toMatch(/^550 5\.1\.1 no such return path/);
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'gone@far.test' } })).toBeNull();

    await send(mx.port, '', [returnPath], dsn);
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'gone@far.test' } })).toMatchObject({ reason: 'bounced' });
    expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'bounced' });
    // the same report again (a lost 250) is handled once
    await send(mx.port, '', [returnPath], dsn);
    expect(await db().inboundMessage.count({ where: { mailboxId: tenant.mailbox.id, uidValidity: 0n } })).toBe(1);
  }, 30_000);

  it('the CLI adds, lists and removes routes; the most specific match wins; held messages are listed', async () => {
    const tenant = await inboundDomain(ctx.api, 'in-cli.test', []);
    const add = (match: string, action: string) => runAdmin('route', 'add', '--account', String(tenant.account.id), '--domain', 'in-cli.test', '--match', match, '--action', action);
    const exact = await add('billing', 'webhook');
    expect(exact).toMatchObject({ code: 0, out: { route: { match: 'billing', action: 'webhook', domain: tenant.domain.id } } });
    const tagged = (await add('billing+*', 'hold')).out.route;
    const any = (await add('*', 'reject')).out.route;
    expect((await add('billing', 'hold')).code).not.toBe(0);
    expect((await runAdmin('route', 'list', '--account', String(tenant.account.id))).out.routes.map((r: { match: string }) => r.match)).toEqual(['billing', 'billing+*', '*']);

    await send(mx.port, 'ann@signed.test', ['billing@in-cli.test'], await message({ From: 'ann@signed.test', To: 'billing@in-cli.test', Subject: 'exact' }, 'x', { domain: 'signed.test', selector: 'mx2026', privateKey: signing.privateKey }));
    await send(mx.port, 'ann@signed.test', ['billing+march@in-cli.test'], await message({ From: 'ann@signed.test', To: 'billing+march@in-cli.test', Subject: 'tagged' }, 'x', { domain: 'signed.test', selector: 'mx2026', privateKey: signing.privateKey }));
    const other = await send(mx.port, 'ann@signed.test', ['sales@in-cli.test'], 'Subject: any\r\n\r\nx\r\n').catch((err: { response?: string }) => err);
    expect(String((other as { response?: string }).response)).toMatch(/^550 5\.7\.1 <sales@in-cli\.test>: mail to this address is refused/);
    const stored = await rows(tenant.account.id);
    expect(stored.map((r) => [r.subject, r.routeId, r.status, r.hash])).toEqual([
      ['exact', exact.out.route.id, 'delivered', null],
      ['tagged', tagged.id, 'held', 'march'],
    ]);

    const held = await asAdmin(ctx.api).get(`/admin/api/inbound?status=held&account=${tenant.account.id}`);
    expect(held.body.messages).toEqual([expect.objectContaining({ subject: 'tagged', hash: 'march', reason: 'route', envelope: { from: 'ann@signed.test', to: ['billing+march@in-cli.test'] } })]);

    expect((await runAdmin('route', 'remove', String(any.id))).code).toBe(0);
    expect((await asAdmin(ctx.api).get(`/admin/api/routes?account=${tenant.account.id}`)).body.routes).toHaveLength(2);
  }, 240_000);
});

/** A delivery status notification as Postfix writes one (RFC 3464), headers only. */
function dsnFor(recipient: string, returnPath: string, messageId: string): string {
  const boundary = `b${crypto.randomBytes(6).toString('hex')}`;
  return [
    'From: MAILER-DAEMON@relay.far.test (Mail Delivery System)',
    `To: ${returnPath}`,
    'Subject: Undelivered Mail Returned to Sender',
    `Message-ID: <${crypto.randomUUID()}@relay.far.test>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain',
    '',
    `I'm sorry to have to inform you that your message could not be delivered to ${recipient}.`,
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.far.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 <gone@far.test>: Recipient address rejected: User unknown',
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    `Message-ID: ${messageId}`,
    'Subject: s',
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
