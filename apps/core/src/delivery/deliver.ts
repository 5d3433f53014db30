import { autoPauseAfter } from '../outreach/auto-pause';
import { announceFinished } from '../sending/finished';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import { Semaphore } from '../batch';
import { config } from '../config';
import type { Db } from '../db';
import { bounceClass, bounceColumn } from '../analytics/bounces';
import { countMessage } from '../analytics/repository';
import { emitMessageEvent } from '../events/messages';
import { logger } from '../logger';
import { metrics } from '../metrics';
import { dependencies, isDatabaseUnavailable } from '../outage';
import { JOB_OPTIONS } from '../queues';
import { applyBounce, bounceOfAnswer, type Bounce } from '../inbound/bounce-policy';
import { composeMail } from './compose';
import { FastClaims, type ClaimedRow } from './fast-claim';
import { guardedKinds, preSendRefusal, type PreSendGuards } from './guards';
import { deliveryLeaseMs, Heartbeat, HOLDER, stillHeld, whileHeld } from './lease';
import { addDeliveryJobs, DeliveryQueue } from './outbox';
import { lockMessage, markAttemptUndelivered } from './repository';
import { isFinalStatus } from './status';
import { Transports } from './transport';
import { DomainSigner } from '../domains/sending';
import { MailboxNeedsReconnect, OAuthProviderAway } from '../oauth/tokens';

export { deliveryLeaseMs } from './lease';

/**
 * What a worker process keeps for delivering, made once by its wiring (apps/worker/src/main.ts) and passed to the
 * delivery processor: the database, the pre-send guards, the claims and "sent" marks its deliveries share (with their
 * counts), the heartbeat of its leases, the SMTP pools, and the bounds on email bytes and `dispatch` rows in flight.
 */
export interface Delivery {
  readonly db: Db;
  readonly guards: PreSendGuards;
  readonly claims: FastClaims;
  /** renews the leases of the rows this process holds */
  readonly heartbeat: Heartbeat;
  readonly transports: Transports;
  /** DKIM signing with the keys of verified sending domains */
  readonly signer: DomainSigner;
  /** the worker's own queueing of rows it wrote (a broadcast's copies), batched as the API's */
  readonly queue: DeliveryQueue;
  /** the bytes of email in memory on their way to the wire (WORKER_MAX_BYTES_IN_FLIGHT; see takeBytes) */
  readonly bytes: Semaphore;
  /** the rows of `dispatch` jobs on the wire at once (batchRowsOnTheWire) */
  readonly rows: Semaphore;
  /** where test keys' messages go instead of SMTP (docs/sandbox.md); without one they wait, never sent */
  readonly sandbox: SandboxOutlet | null;
  /** closes the SMTP pools (the worker's shutdown, a test's end) */
  close(): void;
}

/**
 * The sandbox as delivery sees it (sandbox/sink.ts implements it; the worker's wiring hands it in): it takes a claimed
 * message of a test key's send and writes what became of it, as a delivery would.
 */
export interface SandboxOutlet {
  deliver(db: Db, message: ClaimedRow): Promise<Extract<DeliveryOutcome, { kind: 'sent' | 'rejected' | 'early' }>>;
}

/** `domainKeysTtlMs`: how long the signer keeps a domain's keys (30 s; a test of rotation wants 0). */
export function createDelivery(db: Db, guards: PreSendGuards, options: { domainKeysTtlMs?: number; sandbox?: SandboxOutlet } = {}): Delivery {
  const transports = new Transports(db);
  return {
    db,
    guards,
    claims: new FastClaims(db),
    heartbeat: new Heartbeat(db),
    transports,
    signer: new DomainSigner(options.domainKeysTtlMs),
    queue: new DeliveryQueue(),
    bytes: new Semaphore(config().workerMaxBytesInFlight),
    rows: new Semaphore(batchRowsOnTheWire()),
    sandbox: options.sandbox ?? null,
    close: () => transports.close(),
  };
}

/** The wait before a delivery's first retry (the backoff of JOB_OPTIONS.delivery). */
function firstRetryDelayMs(): number {
  const backoff = JOB_OPTIONS.delivery.backoff;
  return typeof backoff === 'object' && backoff.delay ? backoff.delay : 10_000;
}

export type DeliveryOutcome =
  | { kind: 'sent'; response: string }
  /** nothing to do: the row is gone or already final (a job that ran twice) */
  | { kind: 'finished'; status: string }
  /** another worker holds the row until then; look again after */
  | { kind: 'busy'; until: Date }
  /** send_at is still ahead */
  | { kind: 'early'; until: Date }
  | { kind: 'cancelled'; reason: string }
  | { kind: 'rejected'; status: 'failed' | 'bounced'; response: string }
  /** its mailbox needs reconnecting (OAuth2 consent refused): the row waits, deferred, until it is reconnected */
  | { kind: 'waiting'; reason: string };

/** A failure worth retrying (connection refused, timeout, SMTP 4xx): the job must throw it so BullMQ retries. */
export class TemporaryDeliveryError extends Error {
  override name = 'TemporaryDeliveryError';
}

interface SmtpError extends Error {
  code?: string;
  command?: string;
  response?: string;
  responseCode?: number;
}

/** The dependency watch's name of a mailbox's SMTP server (outage.ts). */
const smtpServer = (mailboxId: number) => `smtp server of mailbox ${mailboxId}`;

/** Whether a failed conversation says the server is away (no connection, no greeting, 421 closing), not this message. */
function serverAway(err: SmtpError): boolean {
  return ['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EGREETING'].includes(err.code ?? '') || err.responseCode === 421;
}

/** Permanent when the server refused for good (5xx) at a step about this message, or nodemailer refused it itself. */
function permanence(err: SmtpError): { status: 'failed' | 'bounced'; bounce: Bounce | null } | null {
  const code = err.responseCode ?? 0;
  if (code >= 500 && code < 600) {
    if (err.command === 'RCPT TO' || err.command === 'DATA' || err.command === 'MAIL FROM') {
      // the same reasons and rules as a report's (docs/inbound.md): about the address -> bounced, else failed
      const bounce = bounceOfAnswer(err.response ?? err.message, err.command);
      if (err.command === 'MAIL FROM' && bounce.class !== 'not_address') Object.assign(bounce, { reason: 'rejected', class: 'not_address', dead: false });
      return { status: bounce.class === 'not_address' ? 'failed' : 'bounced', bounce };
    }
    // 5xx on AUTH or EHLO is the mailbox's set-up, not this message: retry while the operator fixes it
    return null;
  }
  if (err.command === 'API' && (err.code === 'EENVELOPE' || err.code === 'EMESSAGE')) return { status: 'failed', bounce: null };
  return null;
}

type Claim = { kind: 'claimed'; message: ClaimedRow } | Exclude<DeliveryOutcome, { kind: 'sent' } | { kind: 'rejected' }>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * How soon a job looks again at a row whose lease ran out while its holder lives (its mark waiting for Postgres): the
 * holder's heartbeat or mark comes within a second or two of Postgres answering, its beacon goes within 15 s of its death.
 */
const HOLDER_LOOK_AGAIN_MS = 5_000;

/** Takes the row for this worker under a row lock, after the pre-send guards had their say. */
async function claim({ db, claims, guards, heartbeat }: Delivery, messageId: string): Promise<Claim> {
  if (!UUID.test(messageId)) return { kind: 'finished', status: 'missing' };
  // the common case in one statement; everything else (guarded kinds, held, early, final rows) below
  const taken = await claims.claimUnguarded(messageId, deliveryLeaseMs(), guardedKinds(guards));
  if (taken) return { kind: 'claimed', message: taken };
  return db.$transaction(async (tx) => {
    if (!(await lockMessage(tx, messageId))) return { kind: 'finished', status: 'missing' };
    const message = await tx.message.findUniqueOrThrow({ where: { id: messageId }, include: { mailbox: true, send: true } });
    const now = new Date();
    if (isFinalStatus(message.status)) return { kind: 'finished', status: message.status };
    if (message.status === 'sending' && message.lockedUntil && message.lockedUntil > now) return { kind: 'busy', until: message.lockedUntil };
    // a lease that ran out while Postgres was away: taken back only from a holder that is gone (lease.ts)
    if (message.status === 'sending' && (await stillHeld(heartbeat, messageId, message.lockedBy))) return { kind: 'busy', until: new Date(now.getTime() + HOLDER_LOOK_AGAIN_MS) };
    if (message.notBefore && message.notBefore > now) return { kind: 'early', until: message.notBefore };
    // an address that bounced or complained after this email was queued gets nothing more from the account
    const suppressed = await tx.suppression.findUnique({ where: { accountId_email: { accountId: message.accountId, email: message.to } } });
    const refusal = suppressed ? `the address is suppressed (${suppressed.reason})` : await preSendRefusal(guards, tx, message);
    if (refusal) {
      await tx.message.update({ where: { id: messageId }, data: { status: 'cancelled', lastError: refusal, lockedUntil: null } });
      return { kind: 'cancelled', reason: refusal };
    }
    await tx.message.update({
      where: { id: messageId },
      data: { status: 'sending', lockedUntil: new Date(now.getTime() + deliveryLeaseMs()), lockedBy: HOLDER, attempts: { increment: 1 } },
    });
    return { kind: 'claimed', message };
  }, { maxWait: 10_000, timeout: 10_000 });
}

/**
 * Delivers one Message row over its mailbox's SMTP server, at most once per claim: a row already sent, or held by a
 * live worker, is left alone, so a job that runs twice sends once. Temporary failures mark the row deferred (failed on
 * the last attempt) and throw; permanent ones mark it failed or bounced, suppress the address, and return.
 */
export async function deliverMessage(delivery: Delivery, messageId: string, options: { lastAttempt: boolean }): Promise<DeliveryOutcome> {
  const claimed = await claim(delivery, messageId);
  if (claimed.kind !== 'claimed') return claimed;
  return sendClaimed(delivery, claimed.message, options);
}

/**
 * The SMTP conversation for a row this worker holds, and what its answer makes of the row. `afterWire` is called once
 * the conversation is over, before the row is updated.
 */
async function sendClaimed(
  delivery: Delivery,
  message: ClaimedRow,
  options: { lastAttempt: boolean; afterWire?: () => void },
): Promise<Extract<DeliveryOutcome, { kind: 'sent' | 'rejected' | 'waiting' | 'early' }>> {
  // the heartbeat renews the row's lease until it is marked, however long SMTP, the wait for memory (below) or an
  // outage of Postgres lasts
  return whileHeld(delivery.heartbeat, message.id, async () => {
    // the email's bytes are reserved before nodemailer builds it: big emails wait for each other, not the heap
    const bytes = await takeBytes(delivery.bytes, message);
    let onTheWire = true;
    const offTheWire = () => {
      if (!onTheWire) return;
      onTheWire = false;
      delivery.bytes.release(bytes);
      options.afterWire?.();
    };
    try {
      return await talkAndMark(delivery, message, { ...options, afterWire: offTheWire });
    } finally {
      // whatever ended it before the wire (Postgres away while the signing keys were read), the email's bytes and
      // its row's slot go back: a slot kept would shrink the worker's dispatch capacity for good, and a batch that
      // needs it all would wait for ever
      offTheWire();
    }
  });
}

/**
 * Delivery.bytes: the bytes of email a worker process has in memory on their way to the wire, whatever their number
 * (WORKER_MAX_BYTES_IN_FLIGHT, 8 MB by default): ten requests of 50 recipients with a 1 MB attachment are 500 MB of
 * MIME to build otherwise. An email larger than the whole budget goes alone. An email on the wire holds about three
 * times its stored size (the decoded attachment, its base64 lines, the socket's buffers): the worker of the bench's
 * big sends peaked at 291 MB with 64 MB, 231 to 267 MB with 16 MB and 212 to 236 MB with 8 MB, delivering as fast
 * (bench/README.md, "The other phases").
 */
/** About what building and sending the email holds: its bodies and attachments (base64, as stored). */
export function emailBytes(message: ClaimedRow): number {
  const send = message.send;
  const own = (message.text?.length ?? 0) + (message.html?.length ?? 0);
  if (!send) return own + 1_000;
  const attachments = (send.attachments as unknown as { content?: string }[]).reduce((sum, a) => sum + (a.content?.length ?? 0), 0);
  // a submitted message's MIME: as stored (row_to_json's hex is read into bytes once)
  const raw = typeof send.raw === 'string' ? (send.raw as string).length / 2 : (send.raw?.length ?? 0);
  return own + (send.text?.length ?? 0) + (send.html?.length ?? 0) + attachments + raw + 1_000;
}

async function takeBytes(byteSlots: Semaphore, message: ClaimedRow): Promise<number> {
  const bytes = Math.min(emailBytes(message), byteSlots.capacity);
  await byteSlots.acquire(bytes);
  return bytes;
}

async function talkAndMark(
  delivery: Delivery,
  message: ClaimedRow,
  options: { lastAttempt: boolean; afterWire?: () => void },
): Promise<Extract<DeliveryOutcome, { kind: 'sent' | 'rejected' | 'waiting' | 'early' }>> {
  if (message.send?.sandbox) {
    // a test key's message: to the sandbox, never over SMTP (docs/sandbox.md)
    options.afterWire?.();
    if (!delivery.sandbox) throw new Error(`message ${message.id} is a test key's and this worker has no sandbox: it is not sent`);
    return delivery.sandbox.deliver(delivery.db, message);
  }
  if (message.mailbox.authStatus === 'needs_reconnect') {
    options.afterWire?.();
    return waitForReconnect(delivery.db, message, `the mailbox needs reconnecting: ${message.mailbox.disconnectReason ?? 'the provider refused its refresh token'}`);
  }
  let info: SMTPPool.SentMessageInfo;
  // signed with the keys of the From domain when the account verified it (docs/domains.md)
  const mail = await delivery.signer.sign(delivery.db, composeMail(message, message.mailbox, message.send), message.mailbox);
  const stopWatch = metrics.smtpSeconds.startTimer();
  try {
    info = await delivery.transports.for(message.mailbox).sendMail(mail);
  } catch (caught) {
    options.afterWire?.();
    stopWatch({ outcome: 'error' });
    // the provider refused the mailbox's refresh token while this connection logged in: nothing went out
    if (caught instanceof MailboxNeedsReconnect) return waitForReconnect(delivery.db, message, caught.message);
    // its OAuth2 provider away (no token, nothing went out): the mailbox's outage, not this email's attempt
    if (caught instanceof OAuthProviderAway) return waitForProvider(delivery.db, message, caught);
    // the server away: one line for the outage, not one a message (each row records its error)
    if (serverAway(caught as SmtpError)) dependencies.down(smtpServer(message.mailboxId), caught);
    let rejected: Awaited<ReturnType<typeof recordFailure>>;
    try {
      rejected = await recordFailure(delivery.db, message, caught as SmtpError, options);
    } catch (temporary) {
      metrics.deliveries.inc({ result: options.lastAttempt ? 'failed' : 'deferred' });
      throw temporary;
    }
    metrics.deliveries.inc({ result: rejected.status });
    return rejected;
  }
  options.afterWire?.();
  stopWatch({ outcome: 'ok' });
  dependencies.up(smtpServer(message.mailboxId));
  const response = String(info.response ?? '');
  await markSentUntilWritten(delivery.claims, message.id, response);
  metrics.deliveries.inc({ result: 'sent' });
  logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response }, 'delivered');
  return { kind: 'sent', response };
}

/**
 * A row of a mailbox that needs reconnecting (docs/mailboxes.md): back to `deferred`, this attempt not counted and not
 * in message_attempts (no SMTP server was asked anything), no job (the reconciler leaves a disconnected mailbox's rows
 * alone); reconnecting queues it again (oauth/state.ts).
 */
async function waitForReconnect(db: Db, message: ClaimedRow, reason: string): Promise<{ kind: 'waiting'; reason: string }> {
  await db.message.updateMany({
    where: { id: message.id, status: 'sending' },
    data: { status: 'deferred', lastError: reason.slice(0, 500), lockedUntil: null, attempts: { decrement: 1 }, enqueuedAt: null },
  });
  logger.info({ message: message.id, mailbox: message.mailboxId }, 'delivery waits: the mailbox needs reconnecting');
  return { kind: 'waiting', reason };
}

/**
 * A row of a mailbox whose OAuth2 provider is away (oauth/tokens.ts): back to `deferred`, this attempt not counted and
 * not in message_attempts, its job back when the provider may be asked again (the outage's lines are the provider's).
 */
async function waitForProvider(db: Db, message: ClaimedRow, away: OAuthProviderAway): Promise<{ kind: 'early'; until: Date }> {
  await db.message.updateMany({
    where: { id: message.id, status: 'sending' },
    data: { status: 'deferred', lastError: away.message.slice(0, 500), lockedUntil: null, attempts: { decrement: 1 } },
  });
  return { kind: 'early', until: new Date(away.retryAt) };
}

/** The recipient's domain: enough to see where mail goes, without the address in the logs. */
const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/** The longest pause between two tries of a "sent" mark Postgres did not take. */
const MARK_RETRY_MAX_MS = 1_000;

/**
 * The email is out: its mark must not be lost, or the row would be claimed and sent again once its lease ran out.
 * While Postgres does not answer, the mark is kept (with the row's lease, renewed by the heartbeat as soon as Postgres
 * is back) and tried again every 100 ms to 1 s until it is written.
 */
async function markSentUntilWritten(claims: FastClaims, id: string, response: string): Promise<void> {
  for (let pause = 100, tries = 1; ; pause = Math.min(pause * 2, MARK_RETRY_MAX_MS), tries++) {
    try {
      await claims.markSent(id, response);
      if (tries > 1) logger.debug({ message: id, tries }, 'kept sent mark written');
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      // Postgres away: the outage's one line (outage.ts), not one a message
      if (tries === 1) {
        dependencies.down('postgres', err);
        logger.debug({ message: id, err: (err as Error).message }, 'could not write the sent mark; keeping it and trying again');
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * A refused or failed SMTP conversation: permanent answers close the row (and suppress), temporary ones throw. Each
 * such attempt keeps its answer in message_attempts, written by the statement that marks the row.
 */
async function recordFailure(db: Db, message: ClaimedRow, err: SmtpError, options: { lastAttempt: boolean }): Promise<Extract<DeliveryOutcome, { kind: 'rejected' }>> {
  const answer = err.response ?? null;
  const permanent = permanence(err);
  if (permanent) {
    await db.$transaction(async (tx) => {
      await markAttemptUndelivered(tx, message.id, permanent.status, err.message, answer);
      if (permanent.bounce) await applyBounce(tx, message.accountId, message.id, message.to, permanent.bounce);
      // an end of delivery: `sent`, and a bounce by its class (analytics/bounces.ts)
      await countMessage(tx, message.id, permanent.status === 'bounced' ? ['sent', bounceColumn(bounceClass({ dead: permanent.bounce?.dead, smtp: answer }))] : ['sent']);
      await emitMessageEvent(tx, message.id, permanent.status === 'bounced' ? 'message.bounced' : 'message.failed');
      // a bounce may take its campaign's or broadcast's share of dead addresses past the auto-pause rate
      await autoPauseAfter(tx, message.id);
    });
    announceFinished([message.id]);
    logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), status: permanent.status, response: answer ?? err.message }, 'delivery refused for good');
    return { kind: 'rejected', status: permanent.status, response: answer ?? err.message };
  }
  if (options.lastAttempt) {
    // retries exhausted: the end without delivery, and its event, in one transaction
    await db.$transaction(async (tx) => {
      await markAttemptUndelivered(tx, message.id, 'failed', err.message, answer);
      await countMessage(tx, message.id, 'sent');
      await emitMessageEvent(tx, message.id, 'message.failed');
      // an end like any other: it may bring a window that holds a bounce to its minimum (outreach/auto-pause.ts)
      await autoPauseAfter(tx, message.id);
    });
    announceFinished([message.id]);
    logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response: answer ?? err.message }, 'delivery failed: no attempt left');
  } else {
    await markAttemptUndelivered(db, message.id, 'deferred', err.message, answer);
    logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response: answer ?? err.message }, 'delivery deferred');
  }
  throw new TemporaryDeliveryError(`delivery of ${message.id} failed for now: ${err.message}`);
}

/**
 * The rows a worker process has on the wire at once from `dispatch` jobs, however many such jobs run: five times
 * WORKER_CONCURRENCY (100 by default). Each such row holds its email, attachments included, in memory, so memory stays
 * bounded; the SMTP pools stay busy (with WORKER_CONCURRENCY itself as the bound, rows waited on each other's claims
 * and throughput fell from 1,100 to 650 msg/s; bench/README.md). A slot is held from the claim to the end of the SMTP
 * conversation, not during the "sent" mark after it.
 */
export function batchRowsOnTheWire(): number {
  return config().workerConcurrency * 5;
}

/**
 * Delivers a batch of rows in one job (the API's `dispatch` jobs), without a queue job per row: the due rows are
 * claimed a slice at a time (in the statements the worker's claims share: fast-claim.ts) and go out concurrently over
 * their mailboxes' pools. Every other row gets its own delivery job, which decides and retries exactly as for any
 * row: one not due yet (delayed to `send_at`), one the quick claim leaves alone (a guarded kind, held, suppressed,
 * already final), and one that failed for now (after the first retry's wait; it has the usual attempts still ahead).
 */
export async function deliverBatch(delivery: Delivery, rows: { id: string; notBefore: Date | null }[]): Promise<{ sent: number; handedOn: number }> {
  const skip = guardedKinds(delivery.guards);
  const slots = delivery.rows;
  const now = Date.now();
  const due: typeof rows = [];
  const handOn: typeof rows = [];
  for (const row of rows) (!row.notBefore || row.notBefore.getTime() <= now ? due : handOn).push(row);
  const retryAt = new Date(now + firstRetryDelayMs());
  const sends: Promise<DeliveryOutcome | null>[] = [];
  const sendSlice = async (slice: typeof rows) => {
    await slots.acquire(slice.length);
    // each row with the claims of the worker's other jobs and single deliveries: one statement for all of them
    const claims = await Promise.allSettled(slice.map((r) => delivery.claims.claimUnguarded(r.id, deliveryLeaseMs(), skip)));
    let failure: { reason: unknown } | undefined;
    claims.forEach((claimed, j) => {
      const message = claimed.status === 'fulfilled' ? claimed.value : null;
      if (message) {
        // the slot is the email in memory and on the wire: free once the SMTP conversation is over
        const sending = sendClaimed(delivery, message, { lastAttempt: false, afterWire: () => slots.release() }).then(
          (outcome) => {
            // its mailbox's provider is away: the row gets a job of its own for when it may be asked again
            if (outcome.kind === 'early') handOn.push({ id: message.id, notBefore: outcome.until });
            return outcome;
          },
          (err: unknown) => {
            if (!(err instanceof TemporaryDeliveryError)) throw err;
            handOn.push({ id: message.id, notBefore: retryAt });
            return null;
          },
        );
        sends.push(sending);
        return;
      }
      slots.release();
      // a claim Postgres did not answer: the row is as it was, and the job's next run claims it again
      if (claimed.status === 'rejected') failure ??= claimed;
      else handOn.push(slice[j]!);
    });
    if (failure) throw failure.reason;
  };
  const errors: unknown[] = [];
  try {
    for (let i = 0; i < due.length; i += slots.capacity) await sendSlice(due.slice(i, i + slots.capacity));
  } catch (err) {
    errors.push(err);
  }
  // whatever happened, the rows in flight finish and the rows handed on get their jobs before the job reports
  const settled = await Promise.allSettled(sends);
  await addDeliveryJobs(handOn);
  // anything else (Postgres gone while claiming or marking): the job fails and BullMQ runs it again; its rows are
  // final, held (and then handed on) or still claimable
  for (const s of settled) if (s.status === 'rejected') errors.push(s.reason);
  if (errors.length) throw errors[0];
  const sent = settled.filter((s) => s.status === 'fulfilled' && s.value?.kind === 'sent').length;
  return { sent, handedOn: handOn.length };
}
