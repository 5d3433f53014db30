import type { Mailbox } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import type { Failed } from './bounces';
import { unknownFormatFailure } from './bounces';
import type { InboundMail } from './classify';
import { messageById, messageByMessageIds, type OurMessage } from './repository';

/**
 * Anyone can send a mailbox a report, so a bounce or complaint acts only on a message of ours it proves it is about
 * (docs/inbound.md, "Which reports act"):
 * - mail that came to a VERP address of ours (its token verified) is about the message the token names; a complaint
 *   whose attached original has such a Return-Path too;
 * - a mailbox with `return_path: "verp"` takes no other proof: its real bounces all come back to the VERP address;
 * - otherwise the report must name a Message-ID we sent (the attached original's, or In-Reply-To / References), and
 *   that message must have gone to the address the report says failed or complained.
 * Anything else is unmatched: recorded with why, never applied.
 */
export type Proven<T> = T | { unmatched: string };

export const UNMATCHED = {
  verpOnly: 'the mailbox uses VERP and the report did not come to a valid VERP address of ours',
  noMessage: 'names no Message-ID of ours',
  otherRecipient: 'the message it names went to another address',
} as const;

async function namedMessage(tx: Tx, mailboxId: number, mail: InboundMail, recipients: string[]): Promise<OurMessage | null> {
  const ids = [...(mail.report?.originalId ? [mail.report.originalId] : []), ...mail.threadIds];
  return ids.length ? messageByMessageIds(tx, mailboxId, ids, recipients) : null;
}

/** The message a bounce is about and the failed recipients it acts on (the message's own address only). */
export async function provenBounce(tx: Tx, mailbox: Mailbox, mail: InboundMail): Promise<Proven<{ message: OurMessage; recipients: Failed[] }>> {
  const recipients = mail.report?.recipients ?? [];
  const verp = mail.verp ? await messageById(tx, mailbox.id, mail.verp) : null;
  if (verp) {
    // at a VERP address the report is about that message only: its recipient is the message's
    const to = verp.to.toLowerCase();
    const failed = recipients.find((r) => r.address === to) ?? recipients[0] ?? unknownFormatFailure('');
    return { message: verp, recipients: [{ ...failed, address: to }] };
  }
  if (mailbox.returnPath === 'verp') return { unmatched: UNMATCHED.verpOnly };
  const message = await namedMessage(tx, mailbox.id, mail, recipients.map((r) => r.address));
  if (!message) return { unmatched: UNMATCHED.noMessage };
  const mine = recipients.filter((r) => r.address === message.to.toLowerCase());
  if (recipients.length && !mine.length) return { unmatched: UNMATCHED.otherRecipient };
  return { message, recipients: mine };
}

/** The message a complaint is about. */
export async function provenComplaint(tx: Tx, mailbox: Mailbox, mail: InboundMail): Promise<Proven<{ message: OurMessage }>> {
  const token = mail.verp ?? mail.report?.originalVerp ?? null;
  const verp = token ? await messageById(tx, mailbox.id, token) : null;
  if (verp) return { message: verp };
  if (mailbox.returnPath === 'verp') return { unmatched: UNMATCHED.verpOnly };
  const message = await namedMessage(tx, mailbox.id, mail, mail.report?.addresses ?? []);
  if (!message) return { unmatched: UNMATCHED.noMessage };
  // a feedback report may hide the complainant (redacted): then the Message-ID alone says who
  const addresses = mail.report?.addresses ?? [];
  if (addresses.length && !addresses.includes(message.to.toLowerCase())) return { unmatched: UNMATCHED.otherRecipient };
  return { message };
}
