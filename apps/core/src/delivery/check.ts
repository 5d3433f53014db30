import nodemailer from 'nodemailer';
import type { Mailbox } from '../../../../generated/prisma/client';
import { smtpSettings } from '../services/mailboxes';

/**
 * The console's "test connection": connects, says EHLO, upgrades to TLS when offered and logs in with the mailbox's
 * credentials, then quits. Nothing is sent. A fresh connection (not the worker's pool), with short timeouts.
 */
export async function checkSmtp(mailbox: Mailbox): Promise<{ ok: boolean; message: string }> {
  const smtp = smtpSettings(mailbox);
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: smtp.user ? { user: smtp.user, pass: smtp.password } : undefined,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 15_000,
  });
  try {
    await transport.verify();
    return { ok: true, message: `${smtp.host}:${smtp.port} accepted the connection${smtp.user ? ' and the login' : ''}` };
  } catch (err) {
    return { ok: false, message: `${smtp.host}:${smtp.port}: ${(err as Error).message}` };
  } finally {
    transport.close();
  }
}
