import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * An SMTP server on loopback that offers STARTTLS (or is TLS from the start) with smtp-server's built-in self-signed
 * certificate, and records for each message whether it came over TLS and under which login.
 */
export class TlsSink {
  readonly messages: { to: string; secure: boolean; user?: string }[] = [];
  /** connections that were upgraded to TLS (STARTTLS, or TLS from the start) */
  upgrades = 0;
  logins = 0;
  private readonly server: SMTPServer;
  private port = 0;

  constructor(private readonly credentials: { user: string; pass: string }, private readonly options: { secure?: boolean } = {}) {
    this.server = new SMTPServer({
      secure: options.secure ?? false,
      authOptional: true,
      allowInsecureAuth: true,
      logger: false,
      closeTimeout: 1_000,
      onSecure: (_socket, _session, callback) => {
        this.upgrades++;
        callback();
      },
      onAuth: (auth, _session, callback) => {
        this.logins++;
        if (auth.username === credentials.user && auth.password === credentials.pass) return callback(null, { user: auth.username });
        return callback(new Error('Invalid username or password'));
      },
      onData: (stream, session, callback) => {
        stream.resume();
        stream.on('end', () => {
          for (const r of session.envelope.rcptTo) this.messages.push({ to: r.address, secure: session.secure, user: session.user as string | undefined });
          callback();
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
  }

  /** The mailbox URL, with `query` (`?tls=off`, `?tls=insecure` or ''). */
  url(query: string): string {
    return `${this.options.secure ? 'smtps' : 'smtp'}://${this.credentials.user}:${this.credentials.pass}@127.0.0.1:${this.port}${query}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
