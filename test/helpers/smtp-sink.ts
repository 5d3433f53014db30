import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';
import { waitFor } from './wait';

export interface ReceivedMail {
  /** MAIL FROM and RCPT TO as the server saw them */
  envelope: { from: string; to: string[] };
  raw: Buffer;
  parsed: ParsedMail;
  /** the login the client used, if any */
  user?: string;
}

/** Decides the fate of one RCPT TO or DATA: undefined accepts; an error with `responseCode` refuses (4xx temporary, 5xx permanent). */
export type SinkRule = (stage: 'rcpt' | 'data', address: string, session: SMTPServerSession) => { code: number; message: string } | undefined;

/**
 * A real SMTP server on a loopback port (the `smtp-server` package), keeping every message it accepted, parsed.
 * Tests point a mailbox at `sink.url` and check what arrived on the wire.
 */
export class SmtpSink {
  readonly messages: ReceivedMail[] = [];
  /** every connection attempt, accepted or not */
  connections = 0;
  /** DATA transfers under way now, and the most seen at once */
  dataNow = 0;
  dataMost = 0;
  /** AUTH attempts seen (a password sent over this plain connection) */
  logins = 0;
  rule: SinkRule | undefined;
  /** hold every DATA answer this long (a slow server, for in-flight tests) */
  dataDelayMs = 0;
  private server: SMTPServer;
  private port = 0;

  constructor(private readonly credentials?: { user: string; pass: string }) {
    this.server = new SMTPServer({
      secure: false,
      disabledCommands: credentials ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
      authOptional: !credentials,
      allowInsecureAuth: true,
      logger: false,
      size: 30 * 1024 * 1024,
      onConnect: (_session, callback) => {
        this.connections++;
        callback();
      },
      onAuth: (auth, _session, callback) => {
        this.logins++;
        if (credentials && auth.username === credentials.user && auth.password === credentials.pass) {
          return callback(null, { user: auth.username });
        }
        return callback(new Error('Invalid username or password'));
      },
      onRcptTo: (address: SMTPServerAddress, session, callback) => {
        const refusal = this.rule?.('rcpt', address.address, session);
        if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
        callback();
      },
      onData: (stream, session, done) => {
        this.dataMost = Math.max(this.dataMost, ++this.dataNow);
        const callback = (err?: Error | null) => {
          this.dataNow--;
          done(err);
        };
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const to = session.envelope.rcptTo.map((r) => r.address);
          const refusal = this.rule?.('data', to.join(','), session);
          if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
          const raw = Buffer.concat(chunks);
          const held = new Promise((resolve) => setTimeout(resolve, this.dataDelayMs));
          held.then(() => simpleParser(raw)).then(
            (parsed) => {
              const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
              this.messages.push({ envelope: { from, to }, raw, parsed, user: session.user as string | undefined });
              callback();
            },
            (err: Error) => callback(err),
          );
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** The mailbox SMTP URL that reaches this sink. */
  get url(): string {
    const auth = this.credentials ? `${encodeURIComponent(this.credentials.user)}:${encodeURIComponent(this.credentials.pass)}@` : '';
    // this sink offers no STARTTLS: a login to it must say so (tls=off)
    return `smtp://${auth}127.0.0.1:${this.port}${this.credentials ? '?tls=off' : ''}`;
  }

  get portNumber(): number {
    return this.port;
  }

  to(address: string): ReceivedMail[] {
    return this.messages.filter((m) => m.envelope.to.includes(address.toLowerCase()));
  }

  async waitForCount(count: number, timeout = 15_000): Promise<ReceivedMail[]> {
    await waitFor(() => this.messages.length >= count, { timeout, what: `${count} message(s) at the SMTP sink (have ${this.messages.length})` });
    return this.messages;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
