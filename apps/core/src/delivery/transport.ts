import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { signOnTheWay } from '../domains/sending';
import { smtpSettings } from '../mailboxes';
import { connectionOptions } from '../mailboxes/smtp-connection';
import type { MailboxLogins } from './login';

/** Connections kept open per mailbox; more jobs than this wait for a free connection inside nodemailer. */
const MAX_CONNECTIONS_PER_MAILBOX = 5;

type Pool = Transporter<SMTPPool.SentMessageInfo, SMTPPool.Options>;

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
      // no `dkim` here: the signer's own, on the email's way to the wire (domains/sending.ts DomainSigner)
    });
    transport.use('stream', signOnTheWay);
    this.pools.set(mailbox.id, { version, transport });
    return transport;
  }

  /** Closes every pooled connection (worker shutdown, tests). */
  close(): void {
    for (const { transport } of this.pools.values()) transport.close();
    this.pools.clear();
  }
}
