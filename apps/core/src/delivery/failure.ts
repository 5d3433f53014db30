import type { Db } from '../db';
import { bounceClass, bounceColumn } from '../analytics/bounces';
import { countMessage } from '../analytics/repository';
import { emitMessageEvent } from '../events/messages';
import { logger } from '../logger';
import { TemporaryDeliveryError, type Delivery, type DeliveryOutcome } from './delivery';
import type { ClaimedRow } from './fast-claim';
import type { MailboxLoginAway } from './login';
import type { Refusal, RefusalPolicy } from './refusal';
import { markAttemptUndelivered } from './repository';

// What an SMTP conversation that did not end in 250 makes of its row: closed for good (and suppressed), deferred, or
// waiting for its mailbox's login.

export interface SmtpError extends Error {
  code?: string;
  command?: string;
  response?: string;
  responseCode?: number;
}

/** The dependency watch's name of a mailbox's SMTP server (outage.ts). */
export const smtpServer = (mailboxId: number) => `smtp server of mailbox ${mailboxId}`;

/** Whether a failed conversation says the server is away (no connection, no greeting, 421 closing), not this message. */
export function serverAway(err: SmtpError): boolean {
  return ['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EGREETING'].includes(err.code ?? '') || err.responseCode === 421;
}

/**
 * Permanent when the server refused for good (5xx) at a step about this message, or nodemailer refused it itself. The
 * answer's meaning (about the address or not, dead or not) is the registered bounce policy's (refusal.ts).
 */
function permanence(err: SmtpError, refusals: RefusalPolicy): { status: 'failed' | 'bounced'; refusal: Refusal | null } | null {
  const code = err.responseCode ?? 0;
  if (code >= 500 && code < 600) {
    if (err.command === 'RCPT TO' || err.command === 'DATA' || err.command === 'MAIL FROM') {
      // the same reasons and rules as a report's (docs/inbound.md): about the address -> bounced, else failed
      const refusal = refusals(err.response ?? err.message, err.command);
      return { status: refusal.status, refusal };
    }
    // 5xx on AUTH or EHLO is the mailbox's set-up, not this message: retry while the operator fixes it
    return null;
  }
  if (err.command === 'API' && (err.code === 'EENVELOPE' || err.code === 'EMESSAGE')) return { status: 'failed', refusal: null };
  return null;
}

/**
 * A row of a mailbox that needs reconnecting (docs/mailboxes.md): back to `deferred`, this attempt not counted and not
 * in message_attempts (no SMTP server was asked anything), no job (the reconciler leaves a disconnected mailbox's rows
 * alone); reconnecting queues it again (oauth/state.ts).
 */
export async function waitForReconnect(db: Db, message: ClaimedRow, reason: string): Promise<{ kind: 'waiting'; reason: string }> {
  await db.message.updateMany({
    where: { id: message.id, status: 'sending' },
    data: { status: 'deferred', lastError: reason.slice(0, 500), lockedUntil: null, attempts: { decrement: 1 }, enqueuedAt: null },
  });
  logger.info({ message: message.id, mailbox: message.mailboxId }, 'delivery waits: the mailbox needs reconnecting');
  return { kind: 'waiting', reason };
}

/**
 * A row of a mailbox whose login is away (an OAuth2 provider: login.ts): back to `deferred`, this attempt not counted and
 * not in message_attempts, its job back when the provider may be asked again (the outage's lines are the provider's).
 */
export async function waitForProvider(db: Db, message: ClaimedRow, away: MailboxLoginAway): Promise<{ kind: 'early'; until: Date }> {
  await db.message.updateMany({
    where: { id: message.id, status: 'sending' },
    data: { status: 'deferred', lastError: away.message.slice(0, 500), lockedUntil: null, attempts: { decrement: 1 } },
  });
  return { kind: 'early', until: new Date(away.retryAt) };
}

/** The recipient's domain: enough to see where mail goes, without the address in the logs. */
export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/**
 * A refused or failed SMTP conversation: permanent answers close the row (and suppress), temporary ones throw. Each
 * such attempt keeps its answer in message_attempts, written by the statement that marks the row.
 */
export async function recordFailure({ db, kinds, refusals }: Pick<Delivery, 'db' | 'kinds' | 'refusals'>, message: ClaimedRow, err: SmtpError, options: { lastAttempt: boolean }): Promise<Extract<DeliveryOutcome, { kind: 'rejected' }>> {
  const answer = err.response ?? null;
  const permanent = permanence(err, refusals);
  if (permanent) {
    await db.$transaction(async (tx) => {
      await markAttemptUndelivered(tx, message.id, permanent.status, err.message, answer);
      if (permanent.refusal) await permanent.refusal.apply(tx, message);
      // an end of delivery: `sent`, and a bounce by its class (analytics/bounces.ts)
      await countMessage(tx, message.id, permanent.status === 'bounced' ? ['sent', bounceColumn(bounceClass({ dead: permanent.refusal?.dead, smtp: answer }))] : ['sent']);
      await emitMessageEvent(tx, message.id, permanent.status === 'bounced' ? 'message.bounced' : 'message.failed');
      // its kind's end without delivery: a bounce may take its campaign's or broadcast's share of dead addresses past
      // the auto-pause rate (outreach/auto-pause.ts)
      await kinds.undelivered(tx, message);
    });
    kinds.finished([message]);
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
      await kinds.undelivered(tx, message);
    });
    kinds.finished([message]);
    logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response: answer ?? err.message }, 'delivery failed: no attempt left');
  } else {
    await markAttemptUndelivered(db, message.id, 'deferred', err.message, answer);
    logger.info({ message: message.id, mailbox: message.mailboxId, domain: domainOf(message.to), response: answer ?? err.message }, 'delivery deferred');
  }
  throw new TemporaryDeliveryError(`delivery of ${message.id} failed for now: ${err.message}`);
}

