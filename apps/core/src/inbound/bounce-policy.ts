import { config } from '../config';
import type { Tx } from '../db';
import type { RefusalPolicy } from '../delivery/refusal';
import { metrics } from '../metrics';
import { suppressAddress } from '../suppressions/suppress';
import { findCommand, findReason, findReplyCode, findStatus, reasonClass, type Reason, type ReasonClass } from './bounces/reasons';
import type { Failed } from './bounces';
import { recentMailboxBounces, recordBounce } from './repository';

/**
 * What a bounce does (docs/inbound.md, "Bounce reasons"), for a report read from a mailbox and for the SMTP answer at
 * delivery alike:
 * - dead (userunknown, hostunknown, hasmoved, notaccept): the address is suppressed at once;
 * - mailbox (mailboxfull, suspend, expired, systemfull, onhold, undefined): recorded; the address is
 *   suppressed once SOFT_BOUNCE_LIMIT such bounces of different emails came within SOFT_BOUNCE_DAYS, none of them before
 *   the address's latest reply (a reply proves the mailbox works);
 * - not_address (blocked, spamdetected, policyviolation, mesgtoobig, exceedlimit...): never suppresses; recorded on the message, so
 *   the sending mailbox's record shows it, and counted in /metrics.
 */
export interface Bounce {
  reason: Reason;
  class: ReasonClass;
  status: string | null;
  smtp_code: string | null;
  diagnostic: string;
  dead: boolean;
  /** when the bounce was recorded */
  at: string;
}

export function bounceOf(failed: Pick<Failed, 'reason' | 'status' | 'smtpCode' | 'diagnostic' | 'dead'>, now = new Date()): Bounce {
  return {
    reason: failed.reason,
    class: reasonClass(failed.reason),
    status: failed.status,
    smtp_code: failed.smtpCode,
    diagnostic: failed.diagnostic.slice(0, 1000),
    dead: failed.dead,
    at: now.toISOString(),
  };
}

/** The SMTP answer at delivery, read like a report's diagnostic: the command it answered counts (RCPT, DATA, MAIL). */
export function bounceOfAnswer(answer: string, command: string | undefined, now = new Date()): Bounce {
  const verb = command === 'RCPT TO' ? 'RCPT' : command === 'MAIL FROM' ? 'MAIL' : command === 'DATA' ? 'DATA' : findCommand(answer);
  const status = findStatus(answer);
  const smtpCode = findReplyCode(answer);
  let reason = findReason({ diagnostic: answer, status, command: verb, action: 'failed' });
  // the recipient was accepted at RCPT: a refusal of the data that says nothing clearer is about the content
  if (verb === 'DATA' && (reason === 'onhold' || reason === 'undefined')) reason = 'contenterror';
  const permanent = (status ?? smtpCode ?? '5').startsWith('5');
  return bounceOf({ reason, status, smtpCode, diagnostic: answer.replace(/\s+/g, ' ').trim(), dead: permanent && reasonClass(reason) === 'dead' }, now);
}

/** The `bounce` object of the API, the console and `message.bounced` (docs/inbound.md). */
export interface PublicBounce {
  reason: string;
  class: string;
  status: string | null;
  smtp_code: string | null;
  diagnostic: string;
  dead: boolean;
}

export function publicBounce(b: Bounce | null | undefined): PublicBounce | null {
  if (!b) return null;
  return { reason: b.reason, class: b.class, status: b.status, smtp_code: b.smtp_code, diagnostic: b.diagnostic, dead: b.dead };
}

/** The label of the /metrics counter: the class, or `temporary` for a bounce that is not final. */
export function countBounce(bounce: Bounce, permanent = true): void {
  metrics.bounces.inc({ class: permanent ? bounce.class : 'temporary', reason: bounce.reason });
}

/**
 * Records the bounce on the message and applies the policy to its address. Returns whether the address is now
 * suppressed. Runs in the caller's transaction.
 */
export async function applyBounce(tx: Tx, accountId: number, messageId: string, address: string, bounce: Bounce): Promise<{ suppressed: boolean }> {
  const email = address.trim().toLowerCase();
  await recordBounce(tx, messageId, bounce);
  countBounce(bounce);
  if (bounce.class === 'dead' && bounce.dead) {
    await suppressAddress(tx, accountId, email, 'bounced', bounce.diagnostic || bounce.reason, bounce.reason);
    return { suppressed: true };
  }
  if (bounce.class !== 'mailbox') return { suppressed: false };
  const { softBounceLimit, softBounceDays } = config();
  const n = await recentMailboxBounces(tx, accountId, email, softBounceDays);
  if (n < softBounceLimit) return { suppressed: false };
  await suppressAddress(tx, accountId, email, 'bounced', `${n} mailbox failures within ${softBounceDays} days, the last: ${bounce.diagnostic || bounce.reason}`.slice(0, 1000), bounce.reason);
  return { suppressed: true };
}

/**
 * The policy delivery calls for a permanent SMTP answer about one email (delivery/refusal.ts), registered at start by
 * core/src/email-kinds/: the answer read as a report's diagnostic; a refusal of the sender (MAIL FROM) is never about the
 * address. Applied, it records the bounce and suppresses as a report's does.
 */
export const refusalOf: RefusalPolicy = (answer, command) => {
  const bounce = bounceOfAnswer(answer, command);
  if (command === 'MAIL FROM' && bounce.class !== 'not_address') Object.assign(bounce, { reason: 'rejected', class: 'not_address', dead: false });
  return {
    status: bounce.class === 'not_address' ? 'failed' : 'bounced',
    dead: bounce.dead,
    apply: (tx, message) => applyBounce(tx, message.accountId, message.id, message.to, bounce),
  };
};
