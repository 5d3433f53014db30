import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { Semaphore } from '../batch';
import { logger } from '../logger';
import { metrics } from '../metrics';
import { dependencies, isDatabaseUnavailable } from '../outage';
import { composeMail } from './compose';
import type { Delivery, DeliveryOutcome } from './delivery';
import { domainOf, recordFailure, serverAway, smtpServer, waitForProvider, waitForReconnect, type SmtpError } from './failure';
import type { ClaimedRow, FastClaims } from './fast-claim';
import { guardedKinds, preSendRefusal } from './guards';
import { deliveryLeaseMs, HOLDER, stillHeld, whileHeld } from './lease';
import { MailboxLoginAway, MailboxNeedsReconnect } from './login';
import { lockMessage } from './repository';
import { isFinalStatus } from '../message-status';

export { deliveryLeaseMs } from './lease';
export { createDelivery, TemporaryDeliveryError, type Delivery, type DeliveryOutcome, type SandboxOutlet } from './delivery';

type Claim = { kind: 'claimed'; message: ClaimedRow } | Exclude<DeliveryOutcome, { kind: 'sent' } | { kind: 'rejected' }>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * How soon a job looks again at a row whose lease ran out while its holder lives (its mark waiting for Postgres): the
 * holder's heartbeat or mark comes within a second or two of Postgres answering, its beacon goes within 15 s of its death.
 */
const HOLDER_LOOK_AGAIN_MS = 5_000;

/** Takes the row for this worker under a row lock, after the pre-send guards had their say. */
async function claim({ db, claims, kinds, heartbeat }: Delivery, messageId: string): Promise<Claim> {
  if (!UUID.test(messageId)) return { kind: 'finished', status: 'missing' };
  // the common case in one statement; everything else (guarded kinds, held, early, final rows) below
  const taken = await claims.claimUnguarded(messageId, deliveryLeaseMs(), guardedKinds(kinds.guards));
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
    const refusal = suppressed ? `the address is suppressed (${suppressed.reason})` : await preSendRefusal(kinds.guards, tx, message);
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
export async function sendClaimed(
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
    return delivery.sandbox.deliver(delivery, message);
  }
  if (message.mailbox.authStatus === 'needs_reconnect') {
    options.afterWire?.();
    return waitForReconnect(delivery.db, message, `the mailbox needs reconnecting: ${message.mailbox.disconnectReason ?? 'the provider refused its refresh token'}`);
  }
  let info: SMTPPool.SentMessageInfo;
  // signed with the keys of the From domain when the account verified it (docs/domains.md)
  const mail = await delivery.signer.sign(delivery.db, composeMail(delivery.kinds, message, message.mailbox, message.send), message.mailbox);
  const stopWatch = metrics.smtpSeconds.startTimer();
  try {
    info = await delivery.transports.send(message.mailbox, mail);
  } catch (caught) {
    options.afterWire?.();
    stopWatch({ outcome: 'error' });
    // the provider refused the mailbox's refresh token while this connection logged in: nothing went out
    if (caught instanceof MailboxNeedsReconnect) return waitForReconnect(delivery.db, message, caught.message);
    // its login away (an OAuth2 provider) (no token, nothing went out): the mailbox's outage, not this email's attempt
    if (caught instanceof MailboxLoginAway) return waitForProvider(delivery.db, message, caught);
    // the server away: one line for the outage, not one a message (each row records its error)
    if (serverAway(caught as SmtpError)) dependencies.down(smtpServer(message.mailboxId), caught);
    let rejected: Awaited<ReturnType<typeof recordFailure>>;
    try {
      rejected = await recordFailure(delivery, message, caught as SmtpError, options);
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
  await markSentUntilWritten(delivery.claims, message, response);
  metrics.deliveries.inc({ result: 'sent' });
  logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response }, 'delivered');
  return { kind: 'sent', response };
}

/** The longest pause between two tries of a "sent" mark Postgres did not take. */
const MARK_RETRY_MAX_MS = 1_000;

/**
 * The email is out: its mark must not be lost, or the row would be claimed and sent again once its lease ran out.
 * While Postgres does not answer, the mark is kept (with the row's lease, renewed by the heartbeat as soon as Postgres
 * is back) and tried again every 100 ms to 1 s until it is written.
 */
async function markSentUntilWritten(claims: FastClaims, message: ClaimedRow, response: string): Promise<void> {
  const id = message.id;
  for (let pause = 100, tries = 1; ; pause = Math.min(pause * 2, MARK_RETRY_MAX_MS), tries++) {
    try {
      await claims.markSent(message, response);
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

