import MailComposer from 'nodemailer/lib/mail-composer';
import type { Db } from '../db';
import { composeMail } from '../delivery/compose';
import type { Delivery, SandboxOutlet, DeliveryOutcome } from '../delivery/deliver';
import type { ClaimedRow } from '../delivery/fast-claim';
import { addDeliveryJobs } from '../delivery/outbox';
import { markAttemptUndelivered } from '../delivery/repository';
import { emitEvent } from '../events';
import { emitMessageEvent } from '../events/messages';
import { bounceOfAnswer } from '../inbound/bounce-policy';
import { handleInbound } from '../inbound/handle';
import { recordBounce } from '../inbound/repository';
import { logger } from '../logger';
import { deferSandboxMessage, keepSandboxCopy, markSandboxSent } from './repository';

/** The domain of the magic recipients (docs/sandbox.md); `.test` is reserved (RFC 2606): no real mailbox has it. */
export const SANDBOX_DOMAIN = 'sandbox.test';

/** What the sandbox does with a message, by its recipient: `bounce@sandbox.test`, `soft+anything@sandbox.test`... */
export type SandboxFate = 'delivered' | 'bounce' | 'soft' | 'complaint' | 'ooo' | 'reply';

const MAGIC: readonly SandboxFate[] = ['delivered', 'bounce', 'soft', 'complaint', 'ooo', 'reply'];

/**
 * The UIDVALIDITY under which the sandbox's answers are recorded as inbound mail: IMAP's is never 0 (RFC 3501 2.3.1.1),
 * so they never meet a real mailbox's messages or cursor.
 */
const SANDBOX_UID_VALIDITY = 0n;

/** How often `soft@` is deferred before it is delivered, and how long each deferral waits (the live one: 20 s and more). */
export const SOFT_DEFERRALS = 2;
export const SANDBOX_RETRY_MS = 2_000;

const SENT_ANSWER = '250 2.0.0 OK: kept in the sandbox, not sent';
const bounceAnswer = (to: string) => `550 5.1.1 <${to}>: Recipient address rejected: User unknown in local recipient table`;
const softAnswer = (to: string) => `451 4.2.0 <${to}>: Mailbox temporarily unavailable, try again later`;

/**
 * The recipient's answer to a delivered message, read as the mailbox's inbound mail is (inbound/handle.ts): an
 * out-of-office or a reply in its thread, recorded once (its uid is the message's) and handed on as `message.received`.
 */
async function answer(db: Db, message: ClaimedRow, fate: 'ooo' | 'reply'): Promise<void> {
  const now = new Date();
  const ooo = fate === 'ooo';
  const back = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 7));
  await handleInbound(
    db,
    { mailbox: message.mailbox, uidValidity: SANDBOX_UID_VALIDITY, uid: BigInt(`0x${message.id.replace(/-/g, '').slice(0, 15)}`) },
    {
      kind: ooo ? 'auto_reply' : 'message',
      from: message.to,
      subject: `${ooo ? 'Automatic reply' : 'Re'}: ${message.subject}`,
      messageId: `<${fate}-${message.id}@${SANDBOX_DOMAIN}>`,
      date: now,
      threadIds: [message.messageIdHeader],
      report: null,
      verp: null,
      returnDate: ooo ? back : null,
      to: message.mailbox.address,
      text: ooo ? `I am out of the office until ${back.toISOString().slice(0, 10)}. (The sandbox's out-of-office answer.)` : 'Thanks, got it. (The sandbox\'s reply.)',
      html: null,
      attachments: [],
      invalid: false,
    },
    now,
  );
}

/** The fate of a message to `address`: the magic recipient's (with or without `+label`), else delivered. */
export function sandboxFate(address: string): SandboxFate {
  const at = address.lastIndexOf('@');
  if (address.slice(at + 1).toLowerCase() !== SANDBOX_DOMAIN) return 'delivered';
  const local = address.slice(0, at).toLowerCase().split('+')[0]! as SandboxFate;
  return MAGIC.includes(local) ? local : 'delivered';
}

/**
 * Where test keys' messages go instead of an SMTP server (docs/sandbox.md), handed to the worker's delivery by its
 * wiring (apps/worker/src/main.ts). Each message's MIME, built as for the wire, is kept (GET /api/v1/send/:id/raw); then
 * its recipient decides what a live delivery would have met, written with the live path's statuses, attempts and
 * events: delivered (`message.sent`), refused at RCPT as a dead address (`message.bounced`, the bounce on the message),
 * deferred twice then delivered, delivered then complained of (`message.complained`), delivered then answered by an
 * out-of-office or a reply (`message.received`). No suppression, stop-list entry
 * or statistic is written: the sandbox's addresses stay usable, and the account's figures are its live mail's.
 */
export class SandboxSink implements SandboxOutlet {
  async deliver({ db, kinds }: Pick<Delivery, 'db' | 'kinds'>, message: ClaimedRow): Promise<Extract<DeliveryOutcome, { kind: 'sent' | 'rejected' | 'early' }>> {
    const raw = await new MailComposer(composeMail(kinds, message, message.mailbox, message.send)).compile().build();
    await keepSandboxCopy(db, message.id, raw);
    const fate = sandboxFate(message.to);
    if (fate === 'bounce') {
      const answer = bounceAnswer(message.to);
      await db.$transaction(async (tx) => {
        await markAttemptUndelivered(tx, message.id, 'bounced', `Can't send mail - all recipients were rejected: ${answer}`, answer);
        await recordBounce(tx, message.id, bounceOfAnswer(answer, 'RCPT TO'));
        await emitMessageEvent(tx, message.id, 'message.bounced');
      });
      kinds.finished([message]);
      return { kind: 'rejected', status: 'bounced', response: answer };
    }
    // `attempts` counts this one (the claim added it)
    if (fate === 'soft' && message.attempts <= SOFT_DEFERRALS) {
      const answer = softAnswer(message.to);
      const until = new Date(Date.now() + SANDBOX_RETRY_MS);
      await db.$transaction(async (tx) => {
        await deferSandboxMessage(tx, message.id, until);
        await markAttemptUndelivered(tx, message.id, 'deferred', `Can't send mail - all recipients were rejected: ${answer}`, answer);
      });
      // a row of a dispatch job gets a job of its own; a delivery job goes back to delayed (its id is taken: this add is a no-op)
      await addDeliveryJobs([{ id: message.id, notBefore: until }]);
      return { kind: 'early', until };
    }
    await markSandboxSent(db, message.id, SENT_ANSWER);
    kinds.finished([message]);
    // the complaint comes after the delivery, as a feedback report would (inbound/handle.ts writes the same event)
    if (fate === 'complaint') await emitEvent(db, message.accountId, 'message.complained', { id: message.id, mailbox: message.mailboxId, to: message.to });
    if (fate === 'ooo' || fate === 'reply') await answer(db, message, fate);
    logger.info({ message: message.id, fate }, 'kept in the sandbox');
    return { kind: 'sent', response: SENT_ANSWER };
  }
}
