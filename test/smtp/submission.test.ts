import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import nodemailer from 'nodemailer';
import { db } from '../../apps/core/src/db';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { classify } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { as, useApi } from '../helpers/api';
import { makeAccount, makeKey, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { runClient, submissionClient, useSubmission } from './support';

const app = useApi();
const sink = useMail({ queues: ['delivery'], concurrency: 10 });
const smtp = useSubmission();

const client = (token: string, options: { port?: number; secure?: boolean; authMethod?: 'PLAIN' | 'LOGIN' } = {}) =>
  submissionClient(options.port ?? smtp.port, token, options);

async function dkimMailbox(sinkUrl: string) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const account = await makeAccount();
  const mailbox = await createMailbox(db(), {
    account: account.id,
    address: `app-${crypto.randomUUID().slice(0, 8)}@signed.example`,
    name: 'App',
    smtp: sinkUrl,
    dkim: { domain: 'signed.example', selector: 'sub2026', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
  });
  const { token, key } = await makeKey(account.id, mailbox.id, { daily_limit: 1000 });
  const txt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  const resolver = async (name: string, type: string) => {
    if (name === 'sub2026._domainkey.signed.example' && type === 'TXT') return [[txt]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  return { account, mailbox, token, keyId: key.id, resolver };
}

describe('SMTP submission', () => {
  it('swaks: a 50-recipient message with an attachment arrives as 50 copies, attachment intact, DKIM verifying; GET /send/:id shows it; the quota counts it', async () => {
    const tenant = await dkimMailbox(sink.url);
    const attachment = crypto.randomBytes(20_000);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'swaks-')), 'report.bin');
    fs.writeFileSync(file, attachment);
    const to = Array.from({ length: 50 }, (_, i) => `reader${i}@fifty.example`);
    const { code, out } = await runClient('swaks', [
      '--server', `127.0.0.1:${smtp.port}`, '-tls', '--auth', 'PLAIN', '--auth-user', 'wordpress', '--auth-password', tenant.token,
      '--from', tenant.mailbox.address, '--to', to.join(','), '--header', 'Subject: Fifty readers',
      '--body', 'See the report attached.', '--attach-type', 'application/octet-stream', '--attach', `@${file}`,
    ]);
    expect({ code, out: code ? out : '' }).toEqual({ code: 0, out: '' });
    const id = /250 2\.0\.0 OK: queued as ([0-9a-f-]{36})/.exec(out)?.[1];
    expect(id).toBeDefined();

    await waitFor(() => to.every((address) => sink.to(address).length === 1), { timeout: 30_000, what: 'the 50 copies' });
    for (const address of to) {
      const [mail] = sink.to(address);
      expect(mail!.envelope.to).toEqual([address]);
      expect(mail!.parsed.subject).toBe('Fifty readers');
      const attached = mail!.parsed.attachments.find((a) => a.filename === 'report.bin');
      expect(attached && Buffer.compare(attached.content, attachment)).toBe(0);
      expect((await dkimVerify(mail!.raw, { resolver: tenant.resolver })).results[0]!.status.result).toBe('pass');
    }
    const send = await as(app.api, tenant.token).get(`/api/v1/send/${id}`);
    expect(send.status).toBe(200);
    expect(send.body.messages).toHaveLength(50);
    await waitFor(async () => (await as(app.api, tenant.token).get(`/api/v1/send/${id}`)).body.status === 'sent', { timeout: 20_000, what: 'status sent' });
    const usage = await db().keyDailyUsage.findFirstOrThrow({ where: { apiKeyId: tenant.keyId } });
    expect(usage.count).toBe(50);
  });

  it('python smtplib: the MIME is kept as written, Bcc is removed, Message-ID and Date are added; the 51st RCPT answers 452', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const script = `
import smtplib, ssl, sys, json
token, port, sender = sys.argv[1], int(sys.argv[2]), sys.argv[3]
msg = ("From: App <%s>\\r\\nTo: one@kept.example\\r\\nBcc: hidden@kept.example\\r\\nSubject: =?utf-8?B?SMOpbGxv?=\\r\\n"
       "X-Custom: stays\\r\\nMIME-Version: 1.0\\r\\nContent-Type: text/plain; charset=utf-8\\r\\n\\r\\nBody line\\r\\n") % sender
s = smtplib.SMTP("127.0.0.1", port, timeout=20)
s.starttls(context=ssl._create_unverified_context())
s.login("python", token)
refused = s.sendmail(sender, ["one@kept.example", "hidden@kept.example"], msg)
rcpts = ["r%d@many.example" % i for i in range(51)]
s.mail(sender)
codes = [s.rcpt(r)[0] for r in rcpts]
s.rset()
s.quit()
print(json.dumps({"refused": refused, "codes": codes}))
`;
    const { code, out } = await runClient('python3', ['-c', script, tenant.token, String(smtp.port), tenant.mailbox.address]);
    expect(code).toBe(0);
    const result = JSON.parse(out.trim().split('\n').pop()!);
    expect(result.refused).toEqual({});
    expect(result.codes.slice(0, 50).every((c: number) => c === 250)).toBe(true);
    expect(result.codes[50]).toBe(452);
    const copies = await waitFor(() => (sink.to('one@kept.example').length && sink.to('hidden@kept.example').length ? [sink.to('one@kept.example')[0]!, sink.to('hidden@kept.example')[0]!] : null), { timeout: 20_000, what: 'both copies' });
    for (const mail of copies) {
      const text = mail.raw.toString('utf8');
      expect(text).not.toMatch(/^Bcc:/im);
      expect(text).toContain('X-Custom: stays');
      expect(text).toContain('Subject: =?utf-8?B?SMOpbGxv?=');
      expect(mail.parsed.messageId).toMatch(/@/);
      expect(mail.parsed.date).toBeInstanceOf(Date);
      expect(mail.parsed.text?.trim()).toBe('Body line');
    }
    expect(copies[0]!.parsed.messageId).toBe(copies[1]!.parsed.messageId);
    const row = await db().message.findFirstOrThrow({ where: { to: 'one@kept.example', accountId: tenant.account.id } });
    expect(row.subject).toBe('Héllo');
  });

  it('nodemailer: implicit TLS works; a bad key is 535 and counts in the failure rule; a foreign From is 550 5.7.1 naming it; over 1 MB is 552 with SIZE advertised', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const good = await client(tenant.token, { port: smtp.portTls, secure: true }).sendMail({ from: tenant.mailbox.address, to: 'tls@ok.example', subject: 'Over TLS', text: 'hi' });
    expect(good.response).toMatch(/^250 2\.0\.0 OK: queued as [0-9a-f-]{36}/);

    const before = smtp.parts.failures.lockedOut('127.0.0.1');
    expect(before).toBeNull();
    await expect(client('msk_' + 'x'.repeat(32)).sendMail({ from: tenant.mailbox.address, to: 'a@b.example', subject: 's', text: 't' })).rejects.toMatchObject({ responseCode: 535 });

    const foreign = client(tenant.token).sendMail({ from: 'someone@else.example', to: 'a@b.example', subject: 's', text: 't' });
    await expect(foreign).rejects.toMatchObject({ responseCode: 550 });
    await expect(foreign).rejects.toThrow(/5\.7\.1 From someone@else\.example: this key sends only from/);
    // the mailbox's own address under a display name that is another address: refused as on the API
    const disguised = client(tenant.token).sendMail({ from: { name: 'ceo@bank.example', address: tenant.mailbox.address }, to: 'a@b.example', subject: 's', text: 't' });
    await expect(disguised).rejects.toMatchObject({ responseCode: 550 });
    await expect(disguised).rejects.toThrow(/display name may not be an address/);
    // another account's mailbox as Reply-To or Sender: refused
    const other = await makeTenant();
    for (const headers of [{ 'Reply-To': other.mailbox.address }, { Sender: `Them <${other.mailbox.address}>` }]) {
      const theirs = client(tenant.token).sendMail({ from: tenant.mailbox.address, headers, to: 'a@b.example', subject: 's', text: 't' });
      await expect(theirs).rejects.toMatchObject({ responseCode: 550 });
      await expect(theirs).rejects.toThrow(/another account's mailbox/);
    }

    const big = client(tenant.token).sendMail({ from: tenant.mailbox.address, to: 'a@b.example', subject: 's', text: 'x'.repeat(1_100_000) });
    await expect(big).rejects.toMatchObject({ responseCode: 552 });
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(1);
  });

  it('each copy is stored and shown with the Message-ID it carried on the wire (put in, or the client\'s), and a DSN quoting it without VERP matches its copy', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const transport = client(tenant.token);
    const recipients = ['first@wire.example', 'second@wire.example'];
    const sent = [
      // no Message-ID: the service puts one in
      await transport.sendMail({ envelope: { from: tenant.mailbox.address, to: recipients }, raw: `From: ${tenant.mailbox.address}\r\nTo: ${recipients.join(', ')}\r\nSubject: Wire\r\n\r\nBody\r\n` }),
      // the client's own
      await transport.sendMail({ from: tenant.mailbox.address, to: 'own@wire.example', subject: 'Own', text: 'x', messageId: '<client-7f23@app.example>' }),
    ];
    transport.close();
    const ids = sent.map((info) => /queued as ([0-9a-f-]{36})/.exec(info.response)![1]!);
    const onWire = await waitFor(() => {
      const got = [...recipients, 'own@wire.example'].map((to) => sink.to(to)[0]);
      return got.every(Boolean) ? got.map((m) => ({ to: m!.envelope.to[0]!, header: /^Message-ID:\s*(.+)$/im.exec(m!.raw.toString('latin1'))![1]!.trim() })) : null;
    }, { timeout: 20_000, what: 'the three copies' });
    expect(onWire[0]!.header).toBe(onWire[1]!.header);
    expect(onWire[2]!.header).toBe('<client-7f23@app.example>');
    const shown = [];
    for (const id of ids) shown.push(...(await as(app.api, tenant.token).get(`/api/v1/send/${id}`).expect(200)).body.messages);
    expect(shown.map((m: { to: string; message_id: string }) => [m.to, m.message_id]).sort()).toEqual(onWire.map((w) => [w.to, w.header]).sort());

    // a mail server's report about the second copy quotes the header it read (no VERP): it acts on that copy alone
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
    const report = [
      'From: MAILER-DAEMON@wire.example', `To: ${mailbox.address}`, 'Subject: Undelivered Mail Returned to Sender', 'Message-ID: <dsn-1@wire.example>',
      'MIME-Version: 1.0', 'Content-Type: multipart/report; report-type=delivery-status; boundary="B"', '',
      '--B', 'Content-Type: text/plain', '', 'Your message could not be delivered.', '',
      '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.wire.example', '',
      'Final-Recipient: rfc822; second@wire.example', 'Action: failed', 'Status: 5.1.1', 'Diagnostic-Code: smtp; 550 5.1.1 <second@wire.example>: User unknown', '',
      '--B', 'Content-Type: text/rfc822-headers', '', `From: ${mailbox.address}`, 'To: first@wire.example, second@wire.example', 'Subject: Wire', `Message-ID: ${onWire[1]!.header}`, '',
      '--B--', '',
    ].join('\r\n');
    await handleInbound(db(), { mailbox, uidValidity: 1n, uid: 1n }, await classify(report));
    const inbound = await db().inboundMessage.findFirstOrThrow({ where: { mailboxId: mailbox.id, messageId: '<dsn-1@wire.example>' } });
    expect(inbound).toMatchObject({ kind: 'bounce', unmatched: null });
    const rows = await db().message.findMany({ where: { sendId: ids[0] }, orderBy: { to: 'asc' } });
    expect(rows.map((r) => [r.to, r.bounce !== null])).toEqual([['first@wire.example', false], ['second@wire.example', true]]);
  });

  it('the same Message-ID from the same key is accepted once (AUTH PLAIN, then AUTH LOGIN): 250 with the first id, nothing sent twice', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const mail = { from: tenant.mailbox.address, to: 'once@retry.example', subject: 'Retried', text: 'once', messageId: `<retry-${crypto.randomUUID()}@client.example>` };
    const first = await client(tenant.token).sendMail(mail);
    const again = await client(tenant.token, { authMethod: 'LOGIN' }).sendMail(mail);
    const id = (r: { response: string }) => /queued as ([0-9a-f-]{36})/.exec(r.response)![1];
    expect(id(again)).toBe(id(first));
    await waitFor(() => sink.to('once@retry.example').length === 1, { what: 'the one copy' });
    expect(await db().message.count({ where: { to: 'once@retry.example' } })).toBe(1);
  });

  it('messages arriving together: each Message-ID is accepted once; one Message-ID on five connections at once is written once, each answered with its id', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const id = (r: { response: string }) => /queued as ([0-9a-f-]{36})/.exec(r.response)![1];
    const distinct = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        client(tenant.token).sendMail({ from: tenant.mailbox.address, to: `apart${i}@together.example`, subject: 's', text: 't', messageId: `<apart-${i}-${crypto.randomUUID()}@client.example>` }),
      ),
    );
    expect(new Set(distinct.map(id)).size).toBe(5);
    const messageId = `<same-${crypto.randomUUID()}@client.example>`;
    const same = await Promise.all(
      Array.from({ length: 5 }, () => client(tenant.token).sendMail({ from: tenant.mailbox.address, to: 'same@together.example', subject: 's', text: 't', messageId })),
    );
    // the Message-ID's record and its send are written by one statement: the others wait for it and answer its id
    expect(new Set(same.map(id)).size).toBe(1);
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(6);
    expect(await db().message.count({ where: { to: 'same@together.example' } })).toBe(1);
  });

  it('a connection sending message after message keeps no timer of the messages before (a pooled client holds one for days)', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const pooled = nodemailer.createTransport({ pool: true, maxConnections: 1, host: '127.0.0.1', port: smtp.port, requireTLS: true, auth: { user: 'app', pass: tenant.token }, tls: { rejectUnauthorized: false } });
    for (let i = 0; i < 5; i++) await pooled.sendMail({ from: tenant.mailbox.address, to: `pooled${i}@timers.example`, subject: 's', text: 't' });
    // the session's only timer left is its authentication deadline
    const sessions = (smtp.submission as unknown as { sessions: Map<string, { timers: unknown[] }> }).sessions;
    const timers = [...sessions.values()].map((s) => s.timers.length);
    expect(timers.length).toBeGreaterThan(0);
    expect(Math.max(...timers)).toBe(1);
    pooled.close();
  });

  it('the key’s daily limit: a message that would pass it is 452 4.3.1 and writes nothing', async () => {
    const tenant = await makeTenant({ smtp: sink.url, daily_limit: 2 });
    const over = client(tenant.token).sendMail({ from: tenant.mailbox.address, to: ['q1@quota.example', 'q2@quota.example', 'q3@quota.example'], subject: 's', text: 't' });
    await expect(over).rejects.toMatchObject({ responseCode: 452 });
    await expect(over).rejects.toThrow(/4\.3\.1/);
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
  });
});
