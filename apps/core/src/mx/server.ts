import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { Batcher, Semaphore } from '../batch';
import type { Db } from '../db';
import { logger } from '../logger';
import { splitHeader } from '../mime-header';
import { metrics } from '../metrics';
import { dependencies, isDatabaseUnavailable } from '../outage';
import { authenticateMessage, dmarcDisposition, keptResults, type Resolver } from './auth';
import { arrivalHeaders } from './message';
import { cachedDomainRoutes, Refusal, resolveRecipient, type DomainRoutes } from './recipients';
import { spamScore, type SpamResult } from './spam';
import { insertArrivals, type ArrivalWrite } from './repository';
import { storeArrival, type Target } from './store';

/** What the MX needs from its process: made once by apps/mx's main and passed in. */
export interface MxParts {
  db: Db;
  resolver: Resolver;
}

export interface MxSettings {
  port: number;
  host: string;
  hostname: string;
  maxBytes: number;
  rspamdUrl: string;
  maxConnections: number;
  idleTimeoutSeconds: number;
  returnPathHost: string;
  tls: { key: Buffer; cert: Buffer };
  /** MX_REQUIRE_MX_RECORD: mail for an inbound domain is taken only once a check found its MX record */
  requireMxRecord: boolean;
}

/** RFC 5321 4.5.3.1.8: at least 100 recipients must be taken; more are answered 452 (the client sends them again). */
export const MAX_RECIPIENTS = 100;
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * Bytes of messages the MX checks and stores at once (authentication, the header's read, the statement): a message
 * holds several times its size on that way, so 200 clients sending at once wait their turn for the answer to DATA (as
 * RFC 5321 lets them) instead of holding it all together (bench/mx.ts: RSS under 250 MB with 200 connections).
 */
const PROCESSING_BYTES = 1024 * 1024;

/**
 * The MX (docs/mx.md): no AUTH, STARTTLS with the submission certificate, MX_HOSTNAME in the banner. Every
 * refusal is given in the session (unknown recipient 550 5.1.1 at RCPT, a domain not set up 550 5.7.1, too many
 * recipients 452, oversize 552, DMARC p=reject 550 5.7.1 at DATA), so the MX never bounces afterwards. A message is
 * written to Postgres before its 250; Postgres away is 451 4.3.0 and the sender retries.
 */
export class Mx {
  private readonly server: SMTPServer;
  /** the recipients each session's RCPTs resolved to, by session id */
  private readonly targets = new Map<string, Target[]>();
  private readonly domains: DomainRoutes;
  private readonly processing = new Semaphore(PROCESSING_BYTES);
  /**
   * The arrivals of many sessions written by one statement (group commit): each still gets its 250 only once its
   * statement has committed; a batch that fails is written again one arrival at a time, so one bad message fails
   * only its own session (bench/mx.ts: the MX's CPU a message fell from 0.99 ms to 0.71 in one pair of runs).
   */
  private readonly writer: Batcher<ArrivalWrite, void>;
  /** the results of plain mail, kept as long as the resolver keeps the records they were read from */
  private readonly keptResults = keptResults();

  constructor(
    private readonly parts: MxParts,
    private readonly settings: MxSettings,
  ) {
    this.domains = cachedDomainRoutes(parts.db, settings.requireMxRecord);
    this.writer = new Batcher((arrivals) => insertArrivals(parts.db, arrivals).then(() => arrivals.map(() => undefined)), { maxInFlight: 2, maxBatch: 64, overlapAt: 8 });
    const options: SMTPServerOptions & { maxCommandLength: number } = {
      key: settings.tls.key,
      cert: settings.tls.cert,
      name: settings.hostname,
      banner: 'mail service MX',
      size: settings.maxBytes,
      authOptional: true,
      disabledCommands: ['AUTH'],
      disableReverseLookup: true,
      maxClients: settings.maxConnections,
      maxCommandLength: 2048,
      socketTimeout: settings.idleTimeoutSeconds * 1000,
      closeTimeout: CLOSE_TIMEOUT_MS,
      logger: false,
      onConnect: (_session, callback) => {
        metrics.mxSessions.inc();
        callback();
      },
      onMailFrom: (_address, session, callback) => {
        this.targets.set(session.id, []);
        callback();
      },
      onRcptTo: (address, session, callback) =>
        void this.onRcptTo(address.address, session).then(
          () => callback(),
          (err: Error) => callback(this.refusal(err)),
        ),
      onData: (stream, session, callback) =>
        void this.onData(stream, session).then(
          (answer) => callback(null, answer),
          (err: Error) => callback(this.refusal(err)),
        ),
      onClose: (session) => this.targets.delete(session.id),
    };
    this.server = new SMTPServer(options);
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.settings.port, this.settings.host, () => {
        this.server.removeListener('error', reject);
        resolve();
      });
    });
    this.server.on('error', (err: Error) => logger.warn({ err: err.message }, 'MX server error'));
    return ((this.server as unknown as { server: { address(): AddressInfo } }).server.address()).port;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The answer smtp-server gives; counted by reason. An outage is 451 4.3.0, anything unexpected too (logged). */
  private refusal(err: Error): Error {
    if (err instanceof Refusal) {
      metrics.mxRefusals.inc({ reason: err.reason });
      return err;
    }
    if (isDatabaseUnavailable(err)) dependencies.down('postgres', err);
    else logger.error({ err }, 'MX: could not take a message');
    metrics.mxRefusals.inc({ reason: 'unavailable' });
    return new Refusal(451, '4.3.0 the message cannot be stored now; try again later', 'unavailable');
  }

  private async onRcptTo(address: string, session: SMTPServerSession): Promise<void> {
    const targets = this.targets.get(session.id) ?? [];
    if (targets.length >= MAX_RECIPIENTS) throw new Refusal(452, `4.5.3 too many recipients: at most ${MAX_RECIPIENTS} per message`, 'recipients');
    targets.push(await resolveRecipient(this.parts.db, address, this.settings.returnPathHost, this.domains));
    this.targets.set(session.id, targets);
  }

  private async onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const raw = await this.read(stream);
    const room = Math.min(raw.length, PROCESSING_BYTES);
    await this.processing.acquire(room);
    try {
      return await this.take(raw, session);
    } finally {
      this.processing.release(room);
    }
  }

  private async take(raw: Buffer, session: SMTPServerSession): Promise<string> {
    const targets = this.targets.get(session.id) ?? [];
    this.targets.set(session.id, []);
    const context = {
      ip: session.remoteAddress,
      helo: session.hostNameAppearsAs || session.remoteAddress,
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      mta: this.settings.hostname,
    };
    // the header split once, for the authentication and the row's fields
    const header = splitHeader(raw);
    const auth = await authenticateMessage(raw, context, this.parts.resolver, header, this.keptResults);
    if (dmarcDisposition(auth) === 'reject') throw new Refusal(550, "5.7.1 the message fails DMARC and its domain's policy is reject", 'dmarc');
    let spam: SpamResult | null = null;
    if (this.settings.rspamdUrl) {
      spam = await spamScore(this.settings.rspamdUrl, raw, context, targets.map((t) => t.address)).catch((err: Error) => {
        // no score is better than no mail: the message goes on unscored
        logger.warn({ err: err.message }, 'MX: rspamd did not answer');
        return null;
      });
    }
    const { ids } = await storeArrival(this.parts.db, { raw, mailFrom: context.mailFrom, clientAddress: context.ip, helo: context.helo, auth, spam, headers: arrivalHeaders(raw, header), receivedAt: new Date() }, targets, (a) => this.writer.submit(a));
    dependencies.up('postgres');
    return `2.0.0 OK${ids.length ? `: ${ids.join(' ')}` : ''}`;
  }

  /** The DATA, up to MX_MAX_BYTES (past it the rest is read and dropped, and the answer is 552). */
  private async read(stream: SMTPServerDataStream): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size <= this.settings.maxBytes) chunks.push(chunk);
      }
    } catch {
      throw new Refusal(451, '4.3.0 the message did not arrive in full', 'protocol');
    }
    if (stream.sizeExceeded || size > this.settings.maxBytes) throw new Refusal(552, `5.3.4 the message is over ${this.settings.maxBytes} bytes`, 'size');
    // most messages arrive as one chunk: no copy of it
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
  }
}
