import type { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import type { Mailbox } from '../../../../generated/prisma/client';
import { imapSettings, smtpSettings } from '../mailboxes';
import { db as processDb, type Db } from '../db';
import { imapAuth } from '../oauth/imap';
import { oauthLoginOf } from '../oauth/tokens';
import { connectionOptions } from '../mailboxes/smtp-connection';
import { lazy } from '../lazy';

/** imapflow, loaded by the first IMAP check: the API imports this module for its console, and most never check IMAP. */
const imapFlow = lazy(() => (require('imapflow') as typeof import('imapflow')).ImapFlow);

/**
 * The console's "test connection": connects, says EHLO, upgrades to TLS when offered and logs in with the mailbox's
 * credentials, then quits. Nothing is sent. A fresh connection (not the worker's pool), with short timeouts.
 */
export async function checkSmtp(mailbox: Mailbox, db: Db = processDb()): Promise<{ ok: boolean; message: string }> {
  const smtp = smtpSettings(mailbox);
  const transport = nodemailer.createTransport({
    // as the worker's pool talks to it (TLS, STARTTLS, tls=off, tls=insecure)
    ...connectionOptions(smtp, oauthLoginOf(db, mailbox)),
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

/** The same for the mailbox's IMAP: logs in, opens INBOX read-only and logs out. Null when the mailbox has no imap. */
export async function checkImap(mailbox: Mailbox, db: Db = processDb()): Promise<{ ok: boolean; message: string } | null> {
  const imap = imapSettings(mailbox);
  if (!imap) return null;
  let auth: Awaited<ReturnType<typeof imapAuth>>;
  try {
    auth = await imapAuth(db, mailbox, imap);
  } catch (err) {
    // an OAuth2 mailbox whose provider refused its refresh token, or is away: an answer about the mailbox
    return { ok: false, message: `${imap.host}:${imap.port}: no access token: ${(err as Error).message}` };
  }
  const ImapClient = imapFlow();
  const client: ImapFlow = new ImapClient({
    host: imap.host,
    port: imap.port,
    secure: imap.secure,
    auth,
    logger: false,
    emitLogs: false,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 15_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const box = await client.mailboxOpen('INBOX', { readOnly: true });
    return { ok: true, message: `${imap.host}:${imap.port} accepted the login; INBOX holds ${box.exists} messages` };
  } catch (err) {
    const detail = (err as { responseText?: string }).responseText ?? (err as Error).message;
    return { ok: false, message: `${imap.host}:${imap.port}: ${detail}` };
  } finally {
    await client.logout().catch(() => client.close());
  }
}
