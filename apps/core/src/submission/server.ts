import { SMTPServer, type SMTPServerAuthentication, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import type { ApiKey } from '../../../../generated/prisma/client';
import type { KeyAuthenticator } from '../auth/authenticator';
import type { AuthFailures } from '../auth/failures';
import type { SmtpConfig } from '../config';
import type { Db } from '../db';
import { Conflict, Forbidden, LimitReached, Unauthorized, Unprocessable } from '../errors';
import { newId } from '../ids';
import { clientKey } from '../ip';
import { logger } from '../logger';
import { metrics } from '../metrics';
import { dependencies, isDatabaseUnavailable } from '../outage';
import { acceptRawSend, type Sending } from '../sending/accept';
import { SEND_LIMITS } from '../sending/schema';
import { Semaphore } from '../batch';
import { HeldRoom, type Share } from './held-room';
import { MalformedMessage, prepareMessage } from './mime';

/** An SMTP answer: smtp-server sends `responseCode` and the message (which starts with the enhanced status code). */
export class SmtpAnswer extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
    /** the refusal's label in smtp_refusals_total */
    readonly reason: string,
  ) {
    super(message);
  }
}

/** What the submission server needs from its process: made once by apps/smtp's main and passed in. */
export interface SubmissionParts {
  db: Db;
  sending: Sending;
  auth: KeyAuthenticator;
  failures: AuthFailures;
}

export type SubmissionSettings = Pick<
  SmtpConfig,
  'port' | 'portTls' | 'host' | 'name' | 'allowInsecureAuth' | 'maxConnectionsPerAddress' | 'maxConnections' | 'authTimeoutSeconds' | 'idleTimeoutSeconds' | 'dataTimeoutSeconds'
> & { tls: { key: Buffer; cert: Buffer } };

/** What a session keeps: the key's token (looked up again, from the authenticator's cache, for each message). */
interface SessionUser {
  token: string;
  keyId: number;
}

/** The parts of smtp-server's connection a session's timers need (not in its types). */
interface Connection {
  id: string;
  send(code: number, message: string): void;
  close(): void;
}

/** RFC 5321 section 4.1.1.1: a command line of 512 octets; AUTH PLAIN with a long key needs more, 2 KB is plenty. */
const MAX_COMMAND_LENGTH = 2048;
/** Commands an unauthenticated client may give (EHLO, STARTTLS, EHLO again, AUTH and a few slips). */
const UNAUTHENTICATED_COMMANDS = 10;
/**
 * Bytes of messages one SMTP process turns into rows at once (prepared, encoded for the statement, written); further
 * messages wait their turn, their clients waiting for the answer to DATA as RFC 5321 lets them. A message in that step
 * holds about four times its size (the DATA, its pieces until joined, the statement's parameter, the driver's buffer).
 */
const ACCEPT_BYTES_IN_FLIGHT = 2 * 1024 * 1024;
/**
 * Bytes of messages one SMTP process holds at once, from the start of their DATA to its answer (HeldRoom: the message
 * holding the most may go past it, by at most its size): each piece of a DATA takes room for itself before the next is
 * read, and until then the rest waits in the client's socket. A session slow to send its DATA holds only what it sent,
 * so twenty of them do not hold up another client's message (a message reserving its whole size up front made the next
 * one wait 5 s behind eight). Fifty clients sending 1 MB messages faster than Postgres stores them held fifty of them,
 * and the garbage they left once they had waited (bench/smtp.ts).
 */
const MESSAGE_BYTES_HELD = 8 * 1024 * 1024;
/** How long a message waits for that room before it is read anyway: clients slow to send their DATA hold up others no longer. */
const HELD_WAIT_MS = 5_000;
/** How long shutting down waits for the messages on their way before it answers 421 to every connection. */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * SMTP submission (docs/smtp.md): STARTTLS on `port`, implicit TLS on `portTls`, AUTH PLAIN or LOGIN with an API key
 * as the password, and every message accepted as POST /api/v1/send accepts a send (acceptRawSend). The 250 after DATA
 * comes once the rows are committed and names the send's id. The protocol's own abuse (garbage, unknown or
 * out-of-order commands, over-long lines, pipelining without reading, idle sockets) is smtp-server's to refuse; this
 * adds the per-address connection cap, the deadline for authenticating, the deadline for DATA and the counts.
 */
export class Submission {
  private readonly servers: { server: SMTPServer; secure: boolean; port: number }[] = [];
  private readonly perAddress = new Map<string, number>();
  /** sessions counted in perAddress, by id, with their address and their timers */
  private readonly sessions = new Map<string, { client: string; timers: NodeJS.Timeout[] }>();
  private closing = false;
  private readonly accepting = new Semaphore(ACCEPT_BYTES_IN_FLIGHT);
  private readonly holding = new HeldRoom(MESSAGE_BYTES_HELD);

  constructor(
    private readonly parts: SubmissionParts,
    private readonly settings: SubmissionSettings,
  ) {
    if (settings.port !== null) this.servers.push({ server: this.createServer(false), secure: false, port: settings.port });
    if (settings.portTls !== null) this.servers.push({ server: this.createServer(true), secure: true, port: settings.portTls });
  }

  /** Starts listening; answers the ports bound (a port of 0 in the settings binds a free one). */
  async listen(): Promise<{ port: number | null; portTls: number | null }> {
    const bound = { port: null as number | null, portTls: null as number | null };
    for (const entry of this.servers) {
      await new Promise<void>((resolve, reject) => {
        entry.server.once('error', reject);
        entry.server.listen(entry.port, this.settings.host, () => {
          entry.server.removeListener('error', reject);
          resolve();
        });
      });
      entry.server.on('error', (err: Error) => logger.warn({ err: err.message }, 'SMTP server error'));
      const port = ((entry.server as unknown as { server: { address(): AddressInfo } }).server.address()).port;
      if (entry.secure) bound.portTls = port;
      else bound.port = port;
    }
    return bound;
  }

  /**
   * Stops taking connections; messages on their way finish (their 250 once written), every other command answers 421,
   * and after CLOSE_TIMEOUT_MS the connections left are told 421 and closed.
   */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.servers.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
    for (const { timers } of this.sessions.values()) timers.forEach((t) => clearTimeout(t));
  }

  private createServer(secure: boolean): SMTPServer {
    const { settings } = this;
    const options: SMTPServerOptions & { maxCommandLength: number } = {
      secure,
      key: settings.tls.key,
      cert: settings.tls.cert,
      name: settings.name,
      banner: 'mail service submission',
      size: SEND_LIMITS.emailBytes,
      authMethods: ['PLAIN', 'LOGIN'],
      allowInsecureAuth: settings.allowInsecureAuth,
      authOptional: false,
      disableReverseLookup: true,
      maxClients: settings.maxConnections,
      maxAllowedUnauthenticatedCommands: UNAUTHENTICATED_COMMANDS,
      maxCommandLength: MAX_COMMAND_LENGTH,
      socketTimeout: settings.idleTimeoutSeconds * 1000,
      closeTimeout: CLOSE_TIMEOUT_MS,
      logger: false,
      onConnect: (session, callback) => this.onConnect(session, callback),
      onAuth: (auth, session, callback) => void this.onAuth(auth, session).then((user) => callback(null, { user }), (err: Error) => callback(this.refusal(err))),
      onMailFrom: (_address, session, callback) => callback(this.onMailFrom(session)),
      onRcptTo: (_address, session, callback) => callback(this.onRcptTo(session)),
      onData: (stream, session, callback) =>
        void this.onData(stream, session).then(
          (answer) => callback(null, answer),
          (err: Error) => callback(this.refusal(err)),
        ),
      onClose: (session) => this.onClose(session),
    };
    return new SMTPServer(options);
  }

  /** The error smtp-server answers with; counted by reason. */
  private refusal(err: Error): Error | null {
    if (err instanceof SmtpAnswer) {
      metrics.smtpRefusals.inc({ reason: err.reason });
      return err;
    }
    logger.error({ err: err.message }, 'SMTP submission failed');
    metrics.smtpRefusals.inc({ reason: 'unavailable' });
    return new SmtpAnswer(451, '4.3.0 internal error; try again later', 'unavailable');
  }

  private connection(session: SMTPServerSession): Connection | undefined {
    for (const { server } of this.servers) {
      for (const c of (server as unknown as { connections: Set<Connection> }).connections) if (c.id === session.id) return c;
    }
    return undefined;
  }

  /** Tells the client `message` with 421 and closes its connection (a deadline passed). */
  private drop(session: SMTPServerSession, message: string, reason: string): void {
    const connection = this.connection(session);
    if (!connection) return;
    metrics.smtpRefusals.inc({ reason });
    connection.send(421, message);
  }

  private onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    metrics.smtpSessions.inc();
    if (this.closing) return callback(this.refusal(new SmtpAnswer(421, '4.3.2 shutting down; try again in a moment', 'shutdown')));
    const client = clientKey(session.remoteAddress);
    const open = this.perAddress.get(client) ?? 0;
    if (open >= this.settings.maxConnectionsPerAddress) {
      return callback(this.refusal(new SmtpAnswer(421, '4.7.0 too many connections from your address; try again later', 'too_many_connections')));
    }
    this.perAddress.set(client, open + 1);
    metrics.smtpSessionsOpen.inc();
    // a connection that has not authenticated in time is closed: strangers hold no socket for long
    const authDeadline = setTimeout(() => {
      if (!session.user) this.drop(session, '4.7.0 authentication took too long; closing', 'auth_timeout');
    }, this.settings.authTimeoutSeconds * 1000);
    authDeadline.unref();
    this.sessions.set(session.id, { client, timers: [authDeadline] });
    callback();
  }

  private onClose(session: SMTPServerSession): void {
    const entry = this.sessions.get(session.id);
    if (!entry) return;
    this.sessions.delete(session.id);
    entry.timers.forEach((t) => clearTimeout(t));
    const open = (this.perAddress.get(entry.client) ?? 1) - 1;
    if (open > 0) this.perAddress.set(entry.client, open);
    else this.perAddress.delete(entry.client);
    metrics.smtpSessionsOpen.dec();
  }

  /**
   * AUTH PLAIN or LOGIN: the user name is free, the password an API key. A wrong one counts in the failure rule of
   * the API (core/auth/failures.ts): past its allowance the address is refused (421) whatever it presents.
   */
  private async onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession): Promise<SessionUser> {
    const address = session.remoteAddress;
    if (this.parts.failures.lockedOut(address)) {
      throw new SmtpAnswer(421, '4.7.0 too many failed authentications from this address; try again later', 'auth');
    }
    const token = (auth.password ?? '').trim();
    let key: ApiKey | null;
    try {
      key = await this.parts.auth.authenticate(token);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      dependencies.down('postgres', err);
      throw new SmtpAnswer(454, '4.7.0 temporary authentication failure; try again later', 'unavailable');
    }
    if (!key) {
      const refused = this.parts.failures.refuse(address, new Unauthorized('unknown key'));
      if (refused instanceof LimitReached) throw new SmtpAnswer(421, '4.7.0 too many failed authentications from this address; try again later', 'auth');
      throw new SmtpAnswer(535, '5.7.8 authentication failed: the password must be a live API key', 'auth');
    }
    return { token, keyId: key.id };
  }

  private onMailFrom(session: SMTPServerSession): Error | null {
    if (this.closing) return this.refusal(new SmtpAnswer(421, '4.3.2 shutting down; try again in a moment', 'shutdown'));
    return session.user ? null : this.refusal(new SmtpAnswer(530, '5.7.0 authentication required', 'protocol'));
  }

  /** RFC 5321 4.5.3.1.10: past the recipients a message may have, 452 (the client sends the rest in another). */
  private onRcptTo(session: SMTPServerSession): Error | null {
    if (session.envelope.rcptTo.length >= SEND_LIMITS.recipients) {
      return this.refusal(new SmtpAnswer(452, `4.5.3 too many recipients: at most ${SEND_LIMITS.recipients} per message`, 'recipients'));
    }
    return null;
  }

  /**
   * DATA: read once there is room for it (at most the size limit kept in memory, within the deadline), prepared,
   * accepted; 250 with the send's id.
   */
  private async onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const room = this.holding.open();
    try {
      const { chunks, size } = await this.read(stream, session, room);
      const user = session.user as unknown as SessionUser;
      const bytes = Math.min(size, ACCEPT_BYTES_IN_FLIGHT);
      await this.accepting.acquire(bytes);
      try {
        const data = Buffer.concat(chunks, size);
        // the pieces are garbage from here: the message is one buffer
        chunks.length = 0;
        return await this.accept(user, data, session.envelope.rcptTo.map((r) => r.address));
      } finally {
        this.accepting.release(bytes);
      }
    } finally {
      this.holding.release(room);
    }
  }

  /**
   * The DATA, in the pieces it came in, within the deadline; 552 past the size limit (counted, not kept). Each kept
   * piece takes its room first (`room.held` counts it), waiting at most HELD_WAIT_MS, then is read anyway.
   */
  private async read(stream: SMTPServerDataStream, session: SMTPServerSession, room: Share): Promise<{ chunks: Buffer[]; size: number }> {
    const entry = this.sessions.get(session.id);
    const deadline = setTimeout(() => {
      this.drop(session, '4.4.2 the message took too long to arrive; closing', 'data_timeout');
    }, this.settings.dataTimeoutSeconds * 1000);
    deadline.unref();
    entry?.timers.push(deadline);
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > SEND_LIMITS.emailBytes) continue;
        if (!(await this.holding.take(room, chunk.length, HELD_WAIT_MS))) metrics.smtpDataPastBound.inc();
        chunks.push(chunk);
      }
    } catch {
      // the client went away in the middle: nothing was accepted
      throw new SmtpAnswer(451, '4.3.0 the message did not arrive in full', 'protocol');
    } finally {
      clearTimeout(deadline);
      // a pooled connection sends message after message: it keeps no deadline of those before
      if (entry) entry.timers = entry.timers.filter((t) => t !== deadline);
    }
    if (stream.sizeExceeded || size > SEND_LIMITS.emailBytes) {
      throw new SmtpAnswer(552, `5.3.4 the message is over ${SEND_LIMITS.emailBytes} bytes`, 'size');
    }
    return { chunks, size };
  }

  private async accept(user: SessionUser, data: Buffer, to: string[]): Promise<string> {
    const { db, sending, auth } = this.parts;
    try {
      const key = await auth.authenticate(user.token);
      if (!key) throw new SmtpAnswer(535, '5.7.8 the API key was revoked or has expired', 'auth');
      if (!key.scopes.includes('send')) throw new SmtpAnswer(550, '5.7.1 this key lacks the scope send', 'auth');
      const mailbox = await sending.mailboxes.sendingMailbox(db, key.mailboxId);
      const sendId = newId();
      const prepared = prepareMessage(data, { id: sendId, domain: mailbox.address.split('@')[1] || 'localhost' });
      const accepted = await acceptRawSend(db, sending, key, { ...prepared, to, sendId }).catch((err: unknown) => {
        // the From rule's refusal names the address the message used
        throw err instanceof Forbidden ? new SmtpAnswer(550, `5.7.1 From ${prepared.from}: ${err.message}`, 'from') : err;
      });
      metrics.smtpMessages.inc({ result: accepted.replayed ? 'repeated' : 'accepted' });
      dependencies.up('postgres');
      return `2.0.0 OK: queued as ${accepted.body.id}${accepted.replayed ? ' (a Message-ID this key already sent: nothing sent again)' : ''}`;
    } catch (err) {
      throw smtpAnswerOf(err);
    }
  }
}

/** The SMTP answer of a refusal of the send path (the API's classes, errors.ts), or of an outage. */
export function smtpAnswerOf(err: unknown): Error {
  if (err instanceof SmtpAnswer) return err;
  if (err instanceof MalformedMessage) return new SmtpAnswer(550, err.message, 'malformed');
  if (err instanceof Forbidden) return new SmtpAnswer(550, `5.7.1 ${err.message}`, 'from');
  if (err instanceof LimitReached) return new SmtpAnswer(452, `4.3.1 ${err.message}`, 'quota');
  if (err instanceof Unprocessable) return new SmtpAnswer(550, `5.1.1 ${err.message}`, 'nobody');
  if (err instanceof Conflict) return new SmtpAnswer(451, '4.3.0 this Message-ID is being accepted on another connection; try again in a moment', 'unavailable');
  if (isDatabaseUnavailable(err)) {
    dependencies.down('postgres', err);
    return new SmtpAnswer(451, '4.3.0 the service cannot store the message now; try again later', 'unavailable');
  }
  return err instanceof Error ? err : new Error(String(err));
}
