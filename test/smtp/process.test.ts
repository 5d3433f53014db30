import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { db } from '../../apps/core/src/db';
import { makeTenant } from '../helpers/factories';
import { freePort, runTs, type Proc } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

/**
 * apps/smtp/src/main.ts run as a real process, as `npm start` runs it: the self-signed development pair made and said,
 * STARTTLS and implicit TLS, a message accepted into the database, /metrics on SMTP_METRICS_PORT, SIGTERM ends it.
 */
jest.setTimeout(90_000);

const sink = new SmtpSink();
let smtp: Proc | undefined;
beforeAll(() => sink.start());
afterAll(async () => {
  if (smtp && smtp.child.exitCode === null) {
    smtp.child.kill('SIGKILL');
    await smtp.exited;
  }
  await sink.stop();
});

it('runs on its own: self-signed pair said in the log, both ports, a message accepted, metrics served, SIGTERM exits 0', async () => {
  const [port, portTls, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'smtp-state-'));
  smtp = runTs('apps/smtp/src/main.ts', [], {
    SMTP_PORT: String(port),
    SMTPS_PORT: String(portTls),
    SMTP_HOST: '127.0.0.1',
    SMTP_METRICS_PORT: String(metricsPort),
    STATE_DIR: stateDir,
    LOG_LEVEL: 'info',
  });
  await waitFor(() => /smtp listening/.test(smtp!.stdout() + smtp!.stderr()), { timeout: 60_000, what: 'the SMTP process' });
  expect(smtp.stdout() + smtp.stderr()).toMatch(/made a self-signed TLS certificate for development/);
  expect(fs.existsSync(path.join(stateDir, 'smtp-tls', 'cert.pem'))).toBe(true);

  const tenant = await makeTenant({ smtp: sink.url });
  for (const [p, secure] of [[port, false], [portTls, true]] as const) {
    const info = await nodemailer
      .createTransport({ host: '127.0.0.1', port: p, secure, requireTLS: !secure, tls: { rejectUnauthorized: false }, auth: { user: 'app', pass: tenant.token } })
      .sendMail({ from: tenant.mailbox.address, to: `process-${p}@example.org`, subject: 'From the process', text: 'hi' });
    const id = /queued as ([0-9a-f-]{36})/.exec(info.response)![1]!;
    expect(await db().message.count({ where: { sendId: id } })).toBe(1);
  }
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  expect(metrics).toMatch(/mailservice_smtp_messages_total\{result="accepted"\} 2/);
  expect(metrics).toMatch(/mailservice_smtp_sessions_total \d+/);
  expect(metrics).toMatch(/mailservice_smtp_sessions \d+/);

  smtp.child.kill('SIGTERM');
  expect(await smtp.exited).toBe(0);
});
