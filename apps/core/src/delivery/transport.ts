import { Readable } from 'node:stream';
import nodemailer, { type Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { signedBytes, signOnTheWay, type WireSignedMail } from '../domains/sending';
import { smtpSettings } from '../mailboxes';
import { connectionOptions } from '../mailboxes/smtp-connection';
import type { MailboxLogins } from './login';
import { wireMime } from './wire-mime';

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

  /**
   * Sends one email over its mailbox's pool. The common email with a plain envelope (`plainEnvelope`) goes to the pool
   * as its bytes, written by wire-mime.ts and signed here: nodemailer's `sendMail` would wrap them in a MIME node and a
   * stream pipeline again, for the same bytes on the wire (in the delivery bench, 0.2 ms of the worker's CPU an email:
   * bench/README.md). Every other email goes through `sendMail`, signed on its way by `signOnTheWay`.
   */
  async send(mailbox: Mailbox, mail: WireSignedMail): Promise<SMTPPool.SentMessageInfo> {
    const pool = this.for(mailbox);
    const envelope = plainEnvelope(mail.envelope);
    const bytes = envelope ? wireMime(mail) : null;
    if (!envelope || !bytes) return pool.sendMail(mail);
    // wireMime writes only an email with its Message-ID
    const entry = poolEntry(envelope, mail.messageId as string, mail.dkimOnTheWay ? signedBytes(bytes, mail.dkimOnTheWay) : bytes);
    return new Promise((resolve, reject) => {
      pool.transporter.send(entry, (err, info) => (err ? reject(err) : resolve(info as SMTPPool.SentMessageInfo)));
    });
  }

  /** Closes every pooled connection (worker shutdown, tests). */
  close(): void {
    for (const { transport } of this.pools.values()) transport.close();
    this.pools.clear();
  }
}

/**
 * An address nodemailer's envelope keeps as it is (a dot-atom local part, a lower-case ASCII domain): anything else is
 * normalised by nodemailer (IDN to punycode, upper case down), so its email goes through `sendMail`.
 */
const PLAIN_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;

/** The envelope of one sender and one recipient, both plain addresses (as composeMail gives it); null otherwise. */
export function plainEnvelope(envelope: Mail.Options['envelope']): { from: string; to: string[] } | null {
  if (!envelope || Object.keys(envelope).some((key) => key !== 'from' && key !== 'to')) return null;
  const { from, to } = envelope as { from?: unknown; to?: unknown };
  if (typeof from !== 'string' || !PLAIN_ADDRESS.test(from)) return null;
  if (!Array.isArray(to) || to.length !== 1 || typeof to[0] !== 'string' || !PLAIN_ADDRESS.test(to[0])) return null;
  return { from, to: [to[0]] };
}

/**
 * What nodemailer's pool reads of a queued email (smtp-pool: `message.getEnvelope`, `messageId`, `getHeader`,
 * `createReadStream`; `data` for its options): the email's bytes as one readable stream. The pool treats it as it
 * treats its own: a connection the server closed before a byte was read hands it to another connection.
 */
function poolEntry(envelope: { from: string; to: string[] }, messageId: string, bytes: Buffer): Parameters<SMTPPool['send']>[0] {
  const message = {
    getEnvelope: () => ({ from: envelope.from, to: [...envelope.to] }),
    messageId: () => messageId,
    getHeader: (key: string) => (key.toLowerCase() === 'message-id' ? messageId : undefined),
    createReadStream: () =>
      new Readable({
        read() {
          this.push(bytes);
          this.push(null);
        },
      }),
  };
  return { data: {}, message } as unknown as Parameters<SMTPPool['send']>[0];
}
