import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { dkimSettings, smtpSettings, type SmtpSettings } from '../mailboxes';
import type { MailboxLogins, OAuthLogin } from './login';

/** Connections kept open per mailbox; more jobs than this wait for a free connection inside nodemailer. */
const MAX_CONNECTIONS_PER_MAILBOX = 5;

type Pool = Transporter<SMTPPool.SentMessageInfo, SMTPPool.Options>;

/**
 * How to talk to a mailbox's server, by its URL (docs/sending.md): `smtps://` is TLS from the start; `smtp://` upgrades
 * with STARTTLS when the server offers it, and a login waits for it (never a password in clear); `?tls=off` is plain
 * SMTP, no STARTTLS even when offered; `?tls=insecure` is TLS that accepts any certificate (self-signed, expired).
 */
export function connectionOptions(smtp: SmtpSettings, oauth?: OAuthLogin): SMTPPool.Options {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: oauth ? xoauth2(smtp.user, oauth) : smtp.user ? { user: smtp.user, pass: smtp.password } : undefined,
    requireTLS: !smtp.secure && smtp.tls !== 'off' && smtp.user !== '',
    ignoreTLS: !smtp.secure && smtp.tls === 'off',
    ...(smtp.tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
  };
}

/**
 * nodemailer's XOAUTH2 login (docs/mailboxes.md): it asks `provide` for a token at each new connection, and once more
 * with `renew` when the server refuses the one it had. An error (MailboxNeedsReconnect) comes out of sendMail as is.
 */
function xoauth2(user: string, provide: OAuthLogin): SMTPPool.Options['auth'] {
  return {
    type: 'OAuth2',
    user,
    provisionCallback: (_user: string, renew: boolean, callback: (err: Error | null, token?: string, expires?: number) => void) => {
      provide(renew).then(({ token, expires }) => callback(null, token, expires), (err: Error) => callback(err));
    },
  } as SMTPPool.Options['auth'];
}

/**
 * A worker's SMTP connections: one pooled transport per mailbox, keyed by id and rebuilt when the mailbox row changes
 * (new host or password). Made once per worker process (createDelivery) and closed when it stops.
 */
export class Transports {
  private readonly pools = new Map<number, { version: number; transport: Pool }>();

  /** `login`: how a mailbox signs in other than with its password (login.ts), handed in by the process's wiring */
  constructor(
    private readonly db: Db,
    private readonly login: MailboxLogins,
  ) {}

  for(mailbox: Mailbox): Pool {
    const version = mailbox.updatedAt.getTime();
    const cached = this.pools.get(mailbox.id);
    if (cached && cached.version === version) return cached.transport;
    cached?.transport.close();
    const smtp = smtpSettings(mailbox);
    const transport = nodemailer.createTransport({
      pool: true,
      maxConnections: MAX_CONNECTIONS_PER_MAILBOX,
      ...connectionOptions(smtp, this.login(this.db, mailbox)),
      // bounded waits: a hung server turns into a temporary failure well inside the delivery lease
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 60_000,
      // every email from a mailbox with a DKIM key is signed, by nodemailer itself (docs/broadcasts.md), with the key
      // parsed once (its types say a PEM string; its signer passes the key to crypto's Sign.sign, which takes either)
      dkim: dkimSettings(mailbox) as unknown as SMTPPool.Options['dkim'],
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
