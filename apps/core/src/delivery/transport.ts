import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { Mailbox } from '../../../../generated/prisma/client';
import { dkimSettings, smtpSettings, type SmtpSettings } from '../mailboxes';

/** Connections kept open per mailbox; more jobs than this wait for a free connection inside nodemailer. */
const MAX_CONNECTIONS_PER_MAILBOX = 5;

type Pool = Transporter<SMTPPool.SentMessageInfo, SMTPPool.Options>;

/**
 * How to talk to a mailbox's server, by its URL (docs/sending.md): `smtps://` is TLS from the start; `smtp://` upgrades
 * with STARTTLS when the server offers it, and a login waits for it (never a password in clear); `?tls=off` is plain
 * SMTP, no STARTTLS even when offered; `?tls=insecure` is TLS that accepts any certificate (self-signed, expired).
 */
export function connectionOptions(smtp: SmtpSettings): SMTPPool.Options {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: smtp.user ? { user: smtp.user, pass: smtp.password } : undefined,
    requireTLS: !smtp.secure && smtp.tls !== 'off' && smtp.user !== '',
    ignoreTLS: !smtp.secure && smtp.tls === 'off',
    ...(smtp.tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
  };
}

/**
 * A worker's SMTP connections: one pooled transport per mailbox, keyed by id and rebuilt when the mailbox row changes
 * (new host or password). Made once per worker process (createDelivery) and closed when it stops.
 */
export class Transports {
  private readonly pools = new Map<number, { version: number; transport: Pool }>();

  for(mailbox: Mailbox): Pool {
    const version = mailbox.updatedAt.getTime();
    const cached = this.pools.get(mailbox.id);
    if (cached && cached.version === version) return cached.transport;
    cached?.transport.close();
    const smtp = smtpSettings(mailbox);
    const transport = nodemailer.createTransport({
      pool: true,
      maxConnections: MAX_CONNECTIONS_PER_MAILBOX,
      ...connectionOptions(smtp),
      // bounded waits: a hung server turns into a temporary failure well inside the delivery lease
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 60_000,
      // every email from a mailbox with a DKIM key is signed, by nodemailer itself (docs/broadcasts.md)
      dkim: dkimSettings(mailbox),
    });
    this.pools.set(mailbox.id, { version, transport });
    return transport;
  }

  /** Closes every pooled connection (worker shutdown, tests). */
  close(): void {
    for (const { transport } of this.pools.values()) transport.close();
    this.pools.clear();
  }
}
