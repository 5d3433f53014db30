import crypto from 'node:crypto';
import net from 'node:net';
import nodemailer from 'nodemailer';
import { KeyAuthenticator } from '../../apps/core/src/auth/authenticator';
import { AuthFailures } from '../../apps/core/src/auth/failures';
import { createDb, db } from '../../apps/core/src/db';
import { registry } from '../../apps/core/src/metrics';
import { createSending } from '../../apps/core/src/sending/accept';
import { Submission } from '../../apps/core/src/submission/server';
import { submissionTls } from '../../apps/core/src/submission/tls';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { PgProxy } from '../helpers/pg-proxy';
import { waitFor } from '../helpers/wait';
import { useSubmission } from './support';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const sink = useMail({ queues: ['delivery'] });
/** the default bounds, TLS required for AUTH */
const strict = useSubmission({ maxConnectionsPerAddress: 3, authTimeoutSeconds: 1, failuresPerMinute: 2 });
/** AUTH in the clear (SMTP_ALLOW_INSECURE_AUTH, loopback development), so raw sockets can speak it; DATA within 1 s */
const plain = useSubmission({ allowInsecureAuth: true, dataTimeoutSeconds: 1 });
/** AUTH in the clear, the default deadlines */
const patient = useSubmission({ allowInsecureAuth: true });

/** A raw SMTP conversation on a socket: what the server wrote, line by line, and whether it closed. */
class Raw {
  readonly socket: net.Socket;
  text = '';
  closed = false;
  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => (this.text += d.toString('latin1')));
    this.socket.on('close', () => (this.closed = true));
    this.socket.on('error', () => undefined);
  }
  write(line: string): void {
    if (!this.socket.destroyed) this.socket.write(line);
  }
  /** waits for a reply line matching `pattern` */
  async expect(pattern: RegExp, timeout = 5_000): Promise<string> {
    return waitFor(() => this.text.split('\r\n').find((l) => pattern.test(l)), { timeout, what: `a reply ${pattern}` });
  }
  end(): void {
    this.socket.destroy();
  }
}

const plainAuth = (token: string) => `AUTH PLAIN ${Buffer.from(`\0app\0${token}`).toString('base64')}\r\n`;

/** A raw conversation greeted, EHLO'd and signed in with the key (AUTH PLAIN in the clear). */
async function signedIn(port: number, token: string): Promise<Raw> {
  const c = new Raw(port);
  await c.expect(/^220 /);
  c.write('EHLO client.example\r\n');
  await c.expect(/^250 /);
  c.write(plainAuth(token));
  await c.expect(/^235 /);
  return c;
}

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await registry.getSingleMetric(name)!.get();
  return metric.values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((s, v) => s + v.value, 0);
}

describe('SMTP submission against misbehaving clients', () => {
  it('AUTH in the clear is refused until STARTTLS (538); the EHLO offers STARTTLS and SIZE', async () => {
    const c = new Raw(strict.port);
    await c.expect(/^220 /);
    c.write('EHLO client.example\r\n');
    await c.expect(/^250 /);
    expect(c.text).toMatch(/250-STARTTLS/);
    expect(c.text).toMatch(/SIZE 1048576/);
    c.write(plainAuth('msk_' + 'a'.repeat(32)));
    await c.expect(/^538 /);
    c.end();
  });

  it('connections per address are capped (421); unauthenticated ones are closed after the deadline', async () => {
    const refusedBefore = await counter('mailservice_smtp_refusals_total', { reason: 'too_many_connections' });
    const open = [new Raw(strict.port), new Raw(strict.port), new Raw(strict.port)];
    await Promise.all(open.map((c) => c.expect(/^220 /)));
    const fourth = new Raw(strict.port);
    await fourth.expect(/^421 4\.7\.0 too many connections/);
    await waitFor(() => fourth.closed, { what: 'the fourth closed' });
    expect(await counter('mailservice_smtp_refusals_total', { reason: 'too_many_connections' })).toBe(refusedBefore + 1);
    // the authentication deadline (1 s here) closes the three
    for (const c of open) await c.expect(/^421 4\.7\.0 authentication took too long/);
    await waitFor(() => open.every((c) => c.closed), { what: 'the three closed' });
    // and their places are free again
    const next = new Raw(strict.port);
    await next.expect(/^220 /);
    next.end();
  });

  it('garbage, over-long lines and a pipelined flood are answered or closed, never a crash', async () => {
    const garbage = new Raw(plain.port);
    await garbage.expect(/^220 /);
    for (let i = 0; i < 12; i++) garbage.write(`\x01\x02NONSENSE ${i}\r\n`);
    await garbage.expect(/^(421|500) /);
    await waitFor(() => garbage.closed, { what: 'the garbage connection closed' });

    const long = new Raw(plain.port);
    await long.expect(/^220 /);
    long.write(`EHLO ${'x'.repeat(5000)}\r\n`);
    await waitFor(() => long.closed, { what: 'the over-long line closed' });

    const flood = new Raw(plain.port);
    await flood.expect(/^220 /);
    flood.write('NOOP\r\n'.repeat(200_000));
    await waitFor(() => flood.closed, { what: 'the flood closed', timeout: 10_000 });

    // the server is fine: a normal client still sends
    const tenant = await makeTenant({ smtp: sink.url });
    const ok = await nodemailer.createTransport({ host: '127.0.0.1', port: plain.port, secure: false, ignoreTLS: true, auth: { user: 'u', pass: tenant.token } })
      .sendMail({ from: tenant.mailbox.address, to: 'after@abuse.example', subject: 'still here', text: 'ok' });
    expect(ok.response).toMatch(/^250 /);
  });

  it('bare LF and body lines over 998 characters are refused with 550 5.6.0; slow DATA is closed with 421; nothing is written', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const c = await signedIn(plain.port, tenant.token);
    const message = () => `MAIL FROM:<${tenant.mailbox.address}>\r\nRCPT TO:<lf@abuse.example>\r\nDATA\r\n`;
    c.write(message());
    await c.expect(/^354 /);
    c.write(`From: ${tenant.mailbox.address}\r\nSubject: bare\r\n\r\nline one\nline two\r\n.\r\n`);
    await c.expect(/^550 5\.6\.0 a bare LF/);
    c.text = '';
    c.write(message());
    await c.expect(/^354 /);
    c.write(`From: ${tenant.mailbox.address}\r\nSubject: long\r\n\r\n${'y'.repeat(1200)}\r\n.\r\n`);
    await c.expect(/^550 5\.6\.0 a line over 998/);
    c.text = '';
    c.write(message());
    await c.expect(/^354 /);
    c.write(`From: ${tenant.mailbox.address}\r\nSubject: slow\r\n\r\nthe rest never comes`);
    await c.expect(/^421 4\.4\.2 the message took too long/, 5_000);
    await waitFor(() => c.closed, { what: 'the slow connection closed' });
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
  });

  it("sessions slow in their DATA hold only what they sent: twenty of them do not hold up another client's message", async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const startData = async () => {
      const c = await signedIn(patient.port, tenant.token);
      c.write(`MAIL FROM:<${tenant.mailbox.address}>\r\nRCPT TO:<held@abuse.example>\r\nDATA\r\n`);
      await c.expect(/^354 /);
      return c;
    };
    const client = () =>
      nodemailer.createTransport({ host: '127.0.0.1', port: patient.port, secure: false, ignoreTLS: true, auth: { user: 'app', pass: tenant.token } });
    // twenty clients started their DATA and send nothing more
    const slow = await Promise.all(Array.from({ length: 20 }, startData));
    const started = Date.now();
    const other = await client().sendMail({ from: tenant.mailbox.address, to: 'other@abuse.example', subject: 's', text: 'not held up' });
    expect(other.response).toMatch(/^250 /);
    // a message waiting for room waits HELD_WAIT_MS (5 s): well under it, with room for a loaded machine
    expect(Date.now() - started).toBeLessThan(3_500);
    slow.forEach((c) => c.end());
  });

  it('the bytes of DATA held at once are bounded: once nine clients sent 1 MB each without ending, a tenth waits for room, at most 5 s', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const line = `${'x'.repeat(998)}\r\n`;
    const startData = async () => {
      const c = await signedIn(patient.port, tenant.token);
      c.write(`MAIL FROM:<${tenant.mailbox.address}>\r\nRCPT TO:<held@abuse.example>\r\nDATA\r\n`);
      await c.expect(/^354 /);
      c.write(`From: ${tenant.mailbox.address}\r\nSubject: big\r\n\r\n${line.repeat(1_000)}`);
      return c;
    };
    const full = await Promise.all(Array.from({ length: 9 }, startData));
    await new Promise((r) => setTimeout(r, 500));
    // the nine end whatever happens: left open, they would hold the room through the tests after this one
    try {
      const past = await counter('mailservice_smtp_data_past_bound_total');
      const started = Date.now();
      const client = nodemailer.createTransport({ host: '127.0.0.1', port: patient.port, secure: false, ignoreTLS: true, auth: { user: 'app', pass: tenant.token } });
      const tenth = await client.sendMail({ from: tenant.mailbox.address, to: 'tenth@abuse.example', subject: 's', text: 'waited' });
      expect(tenth.response).toMatch(/^250 /);
      // it waited for room: at most its own 5 s, at least until a piece of the nine that queued for room before it
      // (up to the pause above earlier) gave up its own 5 s and let the line move (4.4 s once on a loaded CI machine);
      // without the bound it is answered at once
      expect(Date.now() - started).toBeGreaterThanOrEqual(3_500);
      expect(await counter('mailservice_smtp_data_past_bound_total')).toBeGreaterThan(past);
    } finally {
      full.forEach((c) => c.end());
    }
  });

  it('fifty clients sending 1 MB messages at once (six times what is held at once) all get their 250', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const pool = nodemailer.createTransport({
      pool: true, maxConnections: 50, maxMessages: Infinity, host: '127.0.0.1', port: patient.port, secure: false, ignoreTLS: true, auth: { user: 'app', pass: tenant.token },
    });
    // random bytes: about 975 KB once in base64, each message begun before any ends
    const attachment = crypto.randomBytes(720_000);
    const sent = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        pool.sendMail({ from: tenant.mailbox.address, to: `big${i}@abuse.example`, subject: `big ${i}`, text: 'attached', attachments: [{ filename: 'big.bin', content: attachment }] }),
      ),
    );
    pool.close();
    // each got its room in time (when the messages, each holding part of the room, waited on one another, one took over
    // 60 s and was closed with 421). The order that prevents it is tested without timing in held-room.test.ts: here, on
    // a loaded machine, a few pieces may still wait out their 5 s while the messages before them are written (8 once)
    expect(sent.map((s) => s.response.slice(0, 4))).toEqual(Array(50).fill('250 '));
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(50);
  }, 120_000);

  it('failed logins count in the API’s failure rule: past the allowance even the right key is refused', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const login = (pass: string) =>
      nodemailer.createTransport({ host: '127.0.0.1', port: strict.port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false }, auth: { user: 'u', pass } }).verify();
    expect(strict.parts.failures.lockedOut('127.0.0.1')).toBeNull();
    await expect(login('msk_' + 'b'.repeat(32))).rejects.toMatchObject({ responseCode: 535 });
    await expect(login('not a key')).rejects.toMatchObject({ responseCode: 535 });
    await expect(login(tenant.token)).rejects.toMatchObject({ responseCode: 421 });
    expect(strict.parts.failures.lockedOut('127.0.0.1')).not.toBeNull();
  });
});

describe('SMTP submission while Postgres is away and while shutting down', () => {
  const proxy = new PgProxy();
  let proxied: ReturnType<typeof createDb>;
  let submission: Submission;
  let auth: KeyAuthenticator;
  let sending: ReturnType<typeof createSending>;
  let port = 0;
  beforeAll(async () => {
    await proxy.start();
    proxied = createDb(proxy.url(), 4);
    auth = new KeyAuthenticator(proxied);
    await auth.start();
    const tls = submissionTls({ tlsCert: null, tlsKey: null, name: 'localhost' }, fs.mkdtempSync(path.join(os.tmpdir(), 'smtp-tls-')));
    sending = createSending(proxied);
    submission = new Submission({ db: proxied, sending, auth, failures: new AuthFailures(20) }, {
      port: 0, portTls: null, host: '127.0.0.1', name: 'localhost', allowInsecureAuth: true, maxConnectionsPerAddress: 50, maxConnections: 100,
      authTimeoutSeconds: 30, idleTimeoutSeconds: 60, dataTimeoutSeconds: 60, tls,
    });
    port = (await submission.listen()).port!;
  });
  afterAll(async () => {
    await submission.close();
    await auth.stop();
    await sending.finished.stop();
    await proxied.$disconnect();
    await proxy.stop();
  });

  it('answers 451 4.3.0 while Postgres is away; the client’s retry afterwards is sent once', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'u', pass: tenant.token } });
    const mail = { from: tenant.mailbox.address, to: 'outage@retry.example', subject: 'during', text: 'x', messageId: '<outage-retry-1@client.example>' };
    await transport.verify();
    proxy.cutOff();
    try {
      await expect(transport.sendMail(mail)).rejects.toMatchObject({ responseCode: 451 });
    } finally {
      proxy.restore();
    }
    const first = await waitFor(async () => transport.sendMail(mail).catch(() => null), { timeout: 15_000, what: 'a 250 after the outage' });
    const again = await transport.sendMail(mail);
    const id = (r: { response: string }) => /queued as ([0-9a-f-]{36})/.exec(r.response)![1];
    expect(id(again)).toBe(id(first));
    expect(again.response).toMatch(/nothing sent again/);
    await waitFor(() => sink.to('outage@retry.example').length === 1, { what: 'one copy' });
    expect(await db().message.count({ where: { to: 'outage@retry.example' } })).toBe(1);
  });

  it('answers 421 to a new transaction once shutting down', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const c = new Raw(port);
    await c.expect(/^220 /);
    c.write('EHLO client.example\r\n');
    await c.expect(/^250 /);
    c.write(plainAuth(tenant.token));
    await c.expect(/^235 /);
    const closing = submission.close();
    c.write(`MAIL FROM:<${tenant.mailbox.address}>\r\n`);
    await c.expect(/^421 /);
    await waitFor(() => c.closed, { what: 'closed' });
    await closing;
  });
});
